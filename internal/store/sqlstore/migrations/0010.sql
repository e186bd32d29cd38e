ALTER TABLE tokens ADD COLUMN parent TEXT NOT NULL DEFAULT '';
CREATE INDEX tokens_parent ON tokens(parent);
