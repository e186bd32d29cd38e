
CREATE TABLE users (
name         TEXT PRIMARY KEY,
created_at   TEXT NOT NULL,
admin        INTEGER NOT NULL DEFAULT 0,
oidc_issuer  TEXT NOT NULL DEFAULT '',
oidc_subject TEXT NOT NULL DEFAULT '',
revoked_at   TEXT
);
CREATE UNIQUE INDEX users_oidc ON users(oidc_issuer, oidc_subject) WHERE oidc_subject != '';
CREATE TABLE tokens (
id           TEXT PRIMARY KEY,
user_name    TEXT NOT NULL REFERENCES users(name),
label        TEXT NOT NULL DEFAULT '',
hash         TEXT NOT NULL,
created_at   TEXT NOT NULL,
expires_at   TEXT,
last_used_at TEXT,
revoked_at   TEXT
);
CREATE INDEX tokens_user ON tokens(user_name);
CREATE TABLE members (
project   TEXT NOT NULL REFERENCES projects(name),
user_name TEXT NOT NULL REFERENCES users(name),
role      TEXT NOT NULL,
PRIMARY KEY (project, user_name)
);
CREATE INDEX members_user ON members(user_name);
