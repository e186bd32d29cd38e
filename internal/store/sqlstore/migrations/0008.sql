
ALTER TABLE projects ADD COLUMN content_retention_ns INTEGER NOT NULL DEFAULT 0;
CREATE TABLE audit_content (
session_id TEXT NOT NULL,
seq        INTEGER NOT NULL,
expires_at TEXT NOT NULL,
sealed     BLOB NOT NULL,
PRIMARY KEY (session_id, seq)
);
CREATE INDEX audit_content_expiry ON audit_content(expires_at);
