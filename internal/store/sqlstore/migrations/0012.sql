CREATE TABLE project_credentials (
project TEXT NOT NULL REFERENCES projects(name),
name    TEXT NOT NULL,
sealed  BLOB NOT NULL,
PRIMARY KEY (project, name)
);
