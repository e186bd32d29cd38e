-- Attachments: files uploaded to a project, staged for their uploader
-- until a message of a session names them (then bound to that session),
-- their content kept once by digest, sealed.
CREATE TABLE attachments (
id         TEXT PRIMARY KEY,
project    TEXT NOT NULL,
session_id TEXT,
name       TEXT NOT NULL,
kind       TEXT NOT NULL,
media_type TEXT NOT NULL,
size       INTEGER NOT NULL,
digest     TEXT NOT NULL,
redacted   INTEGER NOT NULL,
created_by TEXT NOT NULL,
created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX attachments_session_name ON attachments (session_id, name);
CREATE INDEX attachments_staged ON attachments (project, created_by, session_id);
CREATE INDEX attachments_digest ON attachments (digest);
CREATE TABLE attachment_content (
digest TEXT PRIMARY KEY,
sealed BLOB NOT NULL
);
