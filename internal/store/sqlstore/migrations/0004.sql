
CREATE TABLE usage (
session_id    TEXT NOT NULL REFERENCES sessions(id),
turn_id       TEXT NOT NULL,
step          INTEGER NOT NULL,
model         TEXT NOT NULL,
input_tokens  INTEGER NOT NULL,
output_tokens INTEGER NOT NULL,
cost_usd      REAL NOT NULL,
created_at    TEXT NOT NULL,
PRIMARY KEY (session_id, turn_id, step)
);
