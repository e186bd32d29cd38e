
ALTER TABLE audit ADD COLUMN leaf INTEGER;
CREATE UNIQUE INDEX audit_leaf ON audit(leaf);
CREATE TABLE audit_tree (
idx  INTEGER PRIMARY KEY,
hash BLOB NOT NULL
);
CREATE TABLE audit_leaves (n INTEGER NOT NULL);
INSERT INTO audit_leaves (n) VALUES (0);
