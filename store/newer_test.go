package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"
)

// helperNewer is the child mode "newer": a renderer of a newer release
// that migrates the file at STORE_TEST_PATH to version STORE_TEST_VERSION
// (a column added, the migration recorded) and writes a line's worth more,
// with no checkpoint, so that its commits are in the WAL alone; it says
// "ready" and waits to be killed.
func helperNewer(ctx context.Context, path string) error {
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=wal_autocheckpoint(0)")
	if err != nil {
		return err
	}
	raw.SetMaxOpenConns(1)
	for _, q := range []string{
		`ALTER TABLE events ADD COLUMN lang TEXT NOT NULL DEFAULT ''`,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (` + os.Getenv(envVersion) + `, 'from_a_newer_release.sql', 0)`,
		`INSERT INTO meta (key, value) VALUES ('newer', 'yes')`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	fmt.Println("ready")
	for {
		time.Sleep(time.Hour) // until the parent's SIGKILL
	}
}

// envVersion is the schema version the child mode "newer" migrates to.
const envVersion = "STORE_TEST_VERSION"
