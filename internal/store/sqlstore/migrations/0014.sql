CREATE TABLE blobs (
id     TEXT PRIMARY KEY,
sealed BLOB NOT NULL
);
CREATE TABLE checkpoints (
session_id TEXT NOT NULL REFERENCES sessions(id),
step       INTEGER NOT NULL,
base       TEXT NOT NULL,
tree       TEXT NOT NULL,
call_id    TEXT NOT NULL,
files      TEXT NOT NULL,
skipped    TEXT NOT NULL,
bundle     TEXT NOT NULL,
created_at TEXT NOT NULL,
PRIMARY KEY (session_id, step)
);
