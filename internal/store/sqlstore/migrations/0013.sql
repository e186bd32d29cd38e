CREATE TABLE server_secrets (
name       TEXT PRIMARY KEY,
sealed     BLOB NOT NULL,
created_at TEXT NOT NULL
);
