CREATE TABLE deliveries (
trigger_ref TEXT NOT NULL,
key         TEXT NOT NULL,
result      TEXT NOT NULL,
seen_at     TEXT NOT NULL,
PRIMARY KEY (trigger_ref, key)
);
