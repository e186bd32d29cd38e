CREATE TABLE projects (
name       TEXT PRIMARY KEY,
created_at TEXT NOT NULL
);
CREATE TABLE agents (
project     TEXT NOT NULL REFERENCES projects(name),
name        TEXT NOT NULL,
spec        TEXT NOT NULL,
digest      TEXT NOT NULL,
concurrency INTEGER NOT NULL DEFAULT 0,
created_at  TEXT NOT NULL,
updated_at  TEXT NOT NULL,
PRIMARY KEY (project, name)
);
CREATE TABLE sessions (
id              TEXT PRIMARY KEY,
project         TEXT NOT NULL REFERENCES projects(name),
agent           TEXT NOT NULL,
agent_spec      TEXT NOT NULL,
agent_version   TEXT NOT NULL,
spend_cap_usd   REAL NOT NULL DEFAULT 0,
status          TEXT NOT NULL,
runtime_phase   TEXT NOT NULL DEFAULT '',
archived_at     TEXT,
error           TEXT NOT NULL DEFAULT '',
failure_reason  TEXT NOT NULL DEFAULT '',
display_title   TEXT NOT NULL DEFAULT '',
ambient_status  TEXT NOT NULL DEFAULT '',
input           TEXT NOT NULL DEFAULT '',
repo            TEXT NOT NULL DEFAULT '',
workdir         TEXT NOT NULL DEFAULT '',
base_commit     TEXT NOT NULL DEFAULT '',
retry_of        TEXT NOT NULL DEFAULT '',
handoff         TEXT NOT NULL DEFAULT '',
stop_reason     TEXT NOT NULL DEFAULT '',
respawn         INTEGER NOT NULL DEFAULT 0,
created_by      TEXT NOT NULL,
idempotency_key TEXT UNIQUE,
created_at      TEXT NOT NULL,
updated_at      TEXT NOT NULL
);
CREATE INDEX sessions_list ON sessions(project, created_at);
CREATE TABLE agent_slots (
project    TEXT NOT NULL,
agent      TEXT NOT NULL,
session_id TEXT NOT NULL REFERENCES sessions(id),
PRIMARY KEY (project, agent)
);
CREATE TABLE commands (
id              TEXT PRIMARY KEY,
session_id      TEXT NOT NULL REFERENCES sessions(id),
seq             INTEGER NOT NULL,
kind            TEXT NOT NULL,
payload         TEXT NOT NULL,
state           TEXT NOT NULL,
sender          TEXT NOT NULL,
idempotency_key TEXT NOT NULL,
turn_id         TEXT NOT NULL DEFAULT '',
error           TEXT NOT NULL DEFAULT '',
created_at      TEXT NOT NULL,
updated_at      TEXT NOT NULL,
UNIQUE (session_id, idempotency_key),
UNIQUE (session_id, seq)
);
CREATE TABLE turns (
id            TEXT PRIMARY KEY,
session_id    TEXT NOT NULL REFERENCES sessions(id),
seq           INTEGER NOT NULL,
status        TEXT NOT NULL,
failure_scope TEXT NOT NULL DEFAULT '',
error         TEXT NOT NULL DEFAULT '',
command_ids   TEXT NOT NULL,
created_at    TEXT NOT NULL,
updated_at    TEXT NOT NULL,
UNIQUE (session_id, seq)
);
CREATE TABLE events (
session_id TEXT NOT NULL REFERENCES sessions(id),
seq        INTEGER NOT NULL,
turn_id    TEXT NOT NULL DEFAULT '',
kind       TEXT NOT NULL,
key        TEXT NOT NULL,
data       TEXT NOT NULL,
created_at TEXT NOT NULL,
PRIMARY KEY (session_id, seq),
UNIQUE (session_id, key)
);
