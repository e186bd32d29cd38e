-- Chat: a project's Slack app (its credentials sealed), the Slack users
-- linked to Paddock users through one project's app (and the one-time
-- codes that link them, as digests), the threads sessions are bound to with what was posted in
-- them, and the signatures of deliveries seen (a replay is refused).
CREATE TABLE chat_apps (
project    TEXT PRIMARY KEY REFERENCES projects(name),
team       TEXT NOT NULL,
channels   TEXT NOT NULL,
socket     INTEGER NOT NULL,
sealed     BLOB NOT NULL,
created_by TEXT NOT NULL,
created_at TEXT NOT NULL
);
CREATE TABLE chat_links (
project    TEXT NOT NULL,
team       TEXT NOT NULL,
slack_user TEXT NOT NULL,
user_name  TEXT NOT NULL,
created_at TEXT NOT NULL,
PRIMARY KEY (project, team, slack_user)
);
CREATE INDEX chat_links_user ON chat_links (user_name);
CREATE TABLE chat_codes (
digest     TEXT PRIMARY KEY,
project    TEXT NOT NULL,
team       TEXT NOT NULL,
slack_user TEXT NOT NULL,
expires_at TEXT NOT NULL
);
CREATE TABLE chat_threads (
session_id  TEXT PRIMARY KEY REFERENCES sessions(id),
project     TEXT NOT NULL,
team        TEXT NOT NULL,
channel     TEXT NOT NULL,
ts          TEXT NOT NULL,
cursor      INTEGER NOT NULL,
state       TEXT NOT NULL,
done        INTEGER NOT NULL,
lease_owner TEXT NOT NULL DEFAULT '',
lease_until TEXT NOT NULL DEFAULT '',
UNIQUE (team, channel, ts)
);
CREATE TABLE chat_deliveries (
digest  TEXT PRIMARY KEY,
seen_at TEXT NOT NULL
);
