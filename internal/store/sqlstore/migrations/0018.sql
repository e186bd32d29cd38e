CREATE TABLE audit_checkpoints (
size         INTEGER PRIMARY KEY,
note         TEXT NOT NULL,
published_at TEXT NOT NULL
);
CREATE TABLE audit_keys (
public     TEXT PRIMARY KEY,
first_used TEXT NOT NULL
);
