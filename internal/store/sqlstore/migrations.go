package sqlstore

// migrations are applied in order; each runs once, in its own transaction,
// and its index+1 is recorded in schema_migrations. Never edit a released
// migration: append a new one.
var migrations = []string{
	`CREATE TABLE projects (
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
	);`,
	`
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
	CREATE INDEX approvals_status ON approvals(status, created_at);`,
	`
	ALTER TABLE sessions ADD COLUMN delivery TEXT NOT NULL DEFAULT '';`,
	`
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
	);`,
	`
	CREATE TABLE parks (
		id                  TEXT PRIMARY KEY,
		session_id          TEXT NOT NULL REFERENCES sessions(id),
		reason              TEXT NOT NULL,
		detail              TEXT NOT NULL,
		needs               TEXT NOT NULL,
		recovery_command_id TEXT NOT NULL,
		created_at          TEXT NOT NULL,
		expires_at          TEXT,
		resolved_at         TEXT,
		resolution          TEXT NOT NULL DEFAULT '',
		resolved_by         TEXT NOT NULL DEFAULT '',
		note                TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX parks_session ON parks(session_id, created_at);
	ALTER TABLE sessions ADD COLUMN hold TEXT NOT NULL DEFAULT '';`,
	`
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
	);`,
	`
	ALTER TABLE audit ADD COLUMN leaf INTEGER;
	CREATE UNIQUE INDEX audit_leaf ON audit(leaf);
	CREATE TABLE audit_tree (
		idx  INTEGER PRIMARY KEY,
		hash BLOB NOT NULL
	);
	CREATE TABLE audit_leaves (n INTEGER NOT NULL);
	INSERT INTO audit_leaves (n) VALUES (0);`,
	`
	ALTER TABLE projects ADD COLUMN content_retention_ns INTEGER NOT NULL DEFAULT 0;
	CREATE TABLE audit_content (
		session_id TEXT NOT NULL,
		seq        INTEGER NOT NULL,
		expires_at TEXT NOT NULL,
		sealed     BLOB NOT NULL,
		PRIMARY KEY (session_id, seq)
	);
	CREATE INDEX audit_content_expiry ON audit_content(expires_at);`,
	`
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
	CREATE INDEX members_user ON members(user_name);`,
	`ALTER TABLE tokens ADD COLUMN parent TEXT NOT NULL DEFAULT '';
	CREATE INDEX tokens_parent ON tokens(parent);`,
	`CREATE TABLE session_credentials (
		session_id TEXT NOT NULL,
		name       TEXT NOT NULL,
		sealed     BLOB NOT NULL,
		PRIMARY KEY (session_id, name)
	);`,
	`CREATE TABLE project_credentials (
		project TEXT NOT NULL REFERENCES projects(name),
		name    TEXT NOT NULL,
		sealed  BLOB NOT NULL,
		PRIMARY KEY (project, name)
	);`,
	`CREATE TABLE server_secrets (
		name       TEXT PRIMARY KEY,
		sealed     BLOB NOT NULL,
		created_at TEXT NOT NULL
	);`,
	`CREATE TABLE blobs (
		id     TEXT PRIMARY KEY,
		sealed BLOB NOT NULL
	);
	CREATE TABLE checkpoints (
		session_id TEXT NOT NULL REFERENCES sessions(id),
		step       INTEGER NOT NULL,
		base       TEXT NOT NULL,
		tree       TEXT NOT NULL,
		call_id    TEXT NOT NULL,
		files      TEXT NOT NULL,
		skipped    TEXT NOT NULL,
		bundle     TEXT NOT NULL,
		created_at TEXT NOT NULL,
		PRIMARY KEY (session_id, step)
	);`,
	`ALTER TABLE sessions ADD COLUMN node TEXT NOT NULL DEFAULT '';`,
	`CREATE TABLE deliveries (
		trigger_ref TEXT NOT NULL,
		key         TEXT NOT NULL,
		result      TEXT NOT NULL,
		seen_at     TEXT NOT NULL,
		PRIMARY KEY (trigger_ref, key)
	);`,
	// A membership may name a user not created yet (an invitation): a
	// project admin learns nothing of the server's user names from it.
	`CREATE TABLE members_invitable (
		project   TEXT NOT NULL REFERENCES projects(name),
		user_name TEXT NOT NULL,
		role      TEXT NOT NULL,
		PRIMARY KEY (project, user_name)
	);
	INSERT INTO members_invitable (project, user_name, role) SELECT project, user_name, role FROM members;
	DROP TABLE members;
	ALTER TABLE members_invitable RENAME TO members;
	CREATE INDEX members_user ON members(user_name);`,
	`CREATE TABLE audit_checkpoints (
		size         INTEGER PRIMARY KEY,
		note         TEXT NOT NULL,
		published_at TEXT NOT NULL
	);
	CREATE TABLE audit_keys (
		public     TEXT PRIMARY KEY,
		first_used TEXT NOT NULL
	);`,
}
