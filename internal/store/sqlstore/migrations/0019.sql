-- Remote repositories: a project's connections to its forges (their
-- credentials sealed), and the remote repository a session works on.
CREATE TABLE connections (
project      TEXT NOT NULL REFERENCES projects(name),
name         TEXT NOT NULL,
kind         TEXT NOT NULL,
url          TEXT NOT NULL,
repositories TEXT NOT NULL,
username     TEXT NOT NULL DEFAULT '',
sealed       BLOB NOT NULL,
created_by   TEXT NOT NULL,
created_at   TEXT NOT NULL,
revoked_at   TEXT,
revoked_by   TEXT NOT NULL DEFAULT '',
PRIMARY KEY (project, name)
);
ALTER TABLE sessions ADD COLUMN remote TEXT NOT NULL DEFAULT '';
-- What a session is bound to outside it: a pull request it worked on or
-- delivered. A held binding keeps it from declaring itself done; the
-- forge's closing delivery (a trigger with release: true), or archiving
-- the session, releases it.
CREATE TABLE bindings (
id          TEXT PRIMARY KEY,
session_id  TEXT NOT NULL REFERENCES sessions(id),
project     TEXT NOT NULL,
kind        TEXT NOT NULL,
connection  TEXT NOT NULL,
repo        TEXT NOT NULL,
number      INTEGER NOT NULL,
url         TEXT NOT NULL,
held        INTEGER NOT NULL,
created_at  TEXT NOT NULL,
released_at TEXT,
released_by TEXT NOT NULL DEFAULT '',
UNIQUE (session_id, kind, connection, repo, number)
);
CREATE INDEX bindings_target ON bindings (project, connection, repo, number);
