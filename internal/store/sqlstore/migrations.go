package sqlstore

import (
	"embed"
	"io/fs"
	"slices"
)

// migrationFiles are the schema migrations, one file each
// (migrations/NNNN.sql), applied in the order of their names; each runs
// once, in its own transaction, and its number is recorded in
// schema_migrations. Never edit a released migration: add the next file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the migrations' texts, in order.
var migrations = func() []string {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, n := range names {
		data, err := migrationFiles.ReadFile(n)
		if err != nil {
			panic(err)
		}
		out[i] = string(data)
	}
	return out
}()
