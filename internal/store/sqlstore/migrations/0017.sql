-- A membership may name a user not created yet (an invitation): a
-- project admin learns nothing of the server's user names from it.
CREATE TABLE members_invitable (
project   TEXT NOT NULL REFERENCES projects(name),
user_name TEXT NOT NULL,
role      TEXT NOT NULL,
PRIMARY KEY (project, user_name)
);
INSERT INTO members_invitable (project, user_name, role) SELECT project, user_name, role FROM members;
DROP TABLE members;
ALTER TABLE members_invitable RENAME TO members;
CREATE INDEX members_user ON members(user_name);
