// Package migrations is the store's schema, as migrations: one file each
// (NNNN.sql), applied in the order of their names; each runs once, in
// its own transaction, and its number is recorded in schema_migrations.
// Never edit a released migration: add the next file.
package migrations

import (
	"embed"
	"io/fs"
	"slices"
)

//go:embed *.sql
var files embed.FS

// All are the migrations' texts, in order.
var All = func() []string {
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		panic(err)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, n := range names {
		data, err := files.ReadFile(n)
		if err != nil {
			panic(err)
		}
		out[i] = string(data)
	}
	return out
}()
