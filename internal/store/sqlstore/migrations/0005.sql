
CREATE TABLE parks (
id                  TEXT PRIMARY KEY,
session_id          TEXT NOT NULL REFERENCES sessions(id),
reason              TEXT NOT NULL,
detail              TEXT NOT NULL,
needs               TEXT NOT NULL,
recovery_command_id TEXT NOT NULL,
created_at          TEXT NOT NULL,
expires_at          TEXT,
resolved_at         TEXT,
resolution          TEXT NOT NULL DEFAULT '',
resolved_by         TEXT NOT NULL DEFAULT '',
note                TEXT NOT NULL DEFAULT ''
);
CREATE INDEX parks_session ON parks(session_id, created_at);
ALTER TABLE sessions ADD COLUMN hold TEXT NOT NULL DEFAULT '';
