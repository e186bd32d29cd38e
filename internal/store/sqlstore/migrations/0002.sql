
ALTER TABLE projects ADD COLUMN policy TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN policy TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN policy_digest TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN interactive INTEGER NOT NULL DEFAULT 1;
ALTER TABLE sessions ADD COLUMN approver TEXT NOT NULL DEFAULT '';
CREATE TABLE approvals (
id            TEXT PRIMARY KEY,
session_id    TEXT NOT NULL REFERENCES sessions(id),
turn_id       TEXT NOT NULL,
tool_call_id  TEXT NOT NULL,
tool          TEXT NOT NULL,
args          TEXT NOT NULL,
digest        TEXT NOT NULL,
verdict_rule  TEXT NOT NULL DEFAULT '',
reason        TEXT NOT NULL DEFAULT '',
status        TEXT NOT NULL,
decided_by    TEXT NOT NULL DEFAULT '',
decision_note TEXT NOT NULL DEFAULT '',
expires_at    TEXT NOT NULL,
created_at    TEXT NOT NULL,
decided_at    TEXT
);
CREATE INDEX approvals_status ON approvals(status, created_at);
