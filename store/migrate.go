package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/codemojex/feed/migrations"
)

// migration is one embedded SQL file.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads migrations.FS: files named NNNN_name.sql, sorted by
// version. Duplicate versions are a build mistake and fail loudly.
func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %q: name must be NNNN_name.sql", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %q and %q share version %d", prev, name, v)
		}
		seen[v] = name
		b, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// latestSchema returns the highest migration version this binary knows.
func latestSchema() int {
	ms, err := loadMigrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// schemaNewer is the refusal of a file whose schema version have is newer
// than the newest this binary knows.
func schemaNewer(have, known int) error {
	return fmt.Errorf("%w: file has version %d, this binary knows up to %d", ErrSchemaNewer, have, known)
}

// migrate applies pending migrations one per IMMEDIATE transaction. Each
// step re-reads schema_migrations under the write lock, so when several
// processes race on a new file each migration runs exactly once and the
// losers simply find it recorded.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	known := 0
	if len(ms) > 0 {
		known = ms[len(ms)-1].version
	}
	for {
		var done bool
		err := db.retryBusy(ctx, "migrate", func() error {
			var err error
			done, err = db.migrateStep(ctx, ms, known)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if done {
			return nil
		}
	}
}

func (db *DB) migrateStep(ctx context.Context, ms []migration, known int) (done bool, err error) {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return false, err
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return false, err
	}
	newest := 0
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return false, err
		}
		applied[v] = true
		newest = max(newest, v)
	}
	// Err too: a failed Next closes the rows and leaves Close nil.
	if err := errors.Join(rows.Close(), rows.Err()); err != nil {
		return false, err
	}
	if newest > known {
		return false, schemaNewer(newest, known)
	}
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return false, fmt.Errorf("%s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, time.Now().UnixNano()); err != nil {
			return false, fmt.Errorf("%s: record: %w", m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return false, fmt.Errorf("%s: commit: %w", m.name, err)
		}
		db.log.Info("store migration applied", "version", m.version, "name", m.name)
		return false, nil
	}
	return true, tx.Commit()
}
