// Package migrations holds the store's schema as numbered SQL files
// (NNNN_name.sql), embedded so that every binary carries the schema it was
// built against. The store applies them in order, each in its own
// transaction, and records them in schema_migrations.
package migrations

import "embed"

// FS holds the migration files. Their names start with a four-digit version;
// versions are applied in ascending order and never edited once released.
//
//go:embed *.sql
var FS embed.FS
