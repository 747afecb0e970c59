package bench

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, as the store registers it
)

// storeProbe looks at how many lines a renderer's SQLite file holds,
// read-only and from outside the process. Unlike a scrape of /metrics,
// whose cost inside the renderer grows with its per-game gauges (a third
// of its CPU while 20,000 games drain, scraped every 20 ms), a look here
// costs the renderer nothing: one B-tree descent in this process.
type storeProbe struct {
	path string
	db   *sql.DB
}

func newStoreProbe(path string) *storeProbe { return &storeProbe{path: path} }

// Lines returns the highest seq in the events table: the number of lines
// stored, on a fresh file that saw no duplicate (seqs count up from 1 with
// no gap when every row of every insert goes in). A file or table that
// does not exist yet reads as 0.
func (p *storeProbe) Lines(ctx context.Context) (int64, error) {
	if err := p.open(); err != nil {
		return 0, err
	}
	var n int64
	if err := p.db.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM events").Scan(&n); err != nil {
		return 0, nil // not created or migrated yet
	}
	return n, nil
}

// Count returns the number of rows in the events table.
func (p *storeProbe) Count(ctx context.Context) (int64, error) {
	if err := p.open(); err != nil {
		return 0, err
	}
	var n int64
	if err := p.db.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&n); err != nil {
		return 0, fmt.Errorf("bench: store probe: count: %w", err)
	}
	return n, nil
}

// open opens the probe's connection on first use. mode=ro: a look must
// never create the file before the renderer does, nor take a write lock.
func (p *storeProbe) open() error {
	if p.db != nil {
		return nil
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: p.path}).EscapedPath()+"?mode=ro")
	if err != nil {
		return fmt.Errorf("bench: store probe: %w", err)
	}
	db.SetMaxOpenConns(1)
	p.db = db
	return nil
}

// Close closes the probe's connection.
func (p *storeProbe) Close() error {
	if p.db == nil {
		return nil
	}
	return p.db.Close()
}

// waitStored waits, looking every 20 ms, until the store holds at least n
// lines or rend exits, and returns how long since start it took.
func (p *storeProbe) waitStored(ctx context.Context, rend *Renderer, start time.Time, n int64, timeout time.Duration, logDir string) (time.Duration, error) {
	err := pollEvery(ctx, timeout, 20*time.Millisecond, "every pre-filled entry stored", func() (bool, error) {
		if rend.Exited() {
			return false, fmt.Errorf("bench: renderer exited (see %s)", logDir)
		}
		got, err := p.Lines(ctx)
		return got >= n, err
	})
	return time.Since(start), err
}
