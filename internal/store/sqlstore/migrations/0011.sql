CREATE TABLE session_credentials (
session_id TEXT NOT NULL,
name       TEXT NOT NULL,
sealed     BLOB NOT NULL,
PRIMARY KEY (session_id, name)
);
