
CREATE TABLE audit (
session_id TEXT NOT NULL,
seq        INTEGER NOT NULL,
entry      TEXT NOT NULL,
hash       TEXT NOT NULL,
PRIMARY KEY (session_id, seq)
);
CREATE TABLE audit_seals (
session_id TEXT PRIMARY KEY,
seal       TEXT NOT NULL
);
