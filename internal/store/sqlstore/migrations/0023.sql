-- Forge links: a person's own credential on a project's connection, with
-- which the pull requests of what they accept are opened as them.
CREATE TABLE forge_links (
project    TEXT NOT NULL,
connection TEXT NOT NULL,
user_name  TEXT NOT NULL,
url        TEXT NOT NULL,
login      TEXT NOT NULL,
sealed     BLOB NOT NULL,
created_at TEXT NOT NULL,
PRIMARY KEY (project, connection, user_name)
);
