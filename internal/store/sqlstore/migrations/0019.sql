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
