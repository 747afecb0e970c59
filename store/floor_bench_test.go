package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/codemojex/feed/internal/event"
)

// Schemas of BenchmarkCommitFloor. Both hold the events table's columns;
// they differ in where a new row's index entries land.
const (
	// floorAppend has only structures that grow at their right edge: the
	// rowid, and a unique index led by the EVT id, which is minted from the
	// clock. A commit of a few events of different games touches the same
	// few pages whatever the games: the floor of any design that writes a
	// row per event, such as an inbox folded into the indexed table later.
	floorAppend = `CREATE TABLE lines (
		seq INTEGER PRIMARY KEY AUTOINCREMENT, evt_id TEXT NOT NULL, game TEXT NOT NULL,
		kind TEXT NOT NULL, payload TEXT NOT NULL, html TEXT NOT NULL, stream_id TEXT NOT NULL,
		renderer TEXT NOT NULL, attempts INTEGER NOT NULL, at INTEGER, stored_at INTEGER NOT NULL,
		UNIQUE (evt_id, game))`
	// floorIndexed is the events table as migrations/ build it: two indexes
	// led by the game, so each game in a commit dirties its own leaf in each.
	floorIndexed = `CREATE TABLE lines (
		seq INTEGER PRIMARY KEY AUTOINCREMENT, evt_id TEXT NOT NULL, game TEXT NOT NULL,
		kind TEXT NOT NULL, payload TEXT NOT NULL, html TEXT NOT NULL, stream_id TEXT NOT NULL,
		renderer TEXT NOT NULL, attempts INTEGER NOT NULL, at INTEGER, stored_at INTEGER NOT NULL,
		UNIQUE (game, evt_id));
		CREATE INDEX lines_game_seq ON lines (game, seq)`
)

// BenchmarkCommitFloor measures SQLite itself (the modernc driver, WAL,
// synchronous=NORMAL, as the store opens it) rather than the store: the
// CPU of the committing thread per event when a batch of lines is one
// transaction, by batch size and schema, with no games, players or
// positions writes. It answers what any store design built on one row per
// event could reach at a low rate (docs/benchmarks-journal.md, "the store at a
// low rate: the floor of a commit").
func BenchmarkCommitFloor(b *testing.B) {
	for _, schema := range []struct{ name, ddl string }{{"append", floorAppend}, {"indexed", floorIndexed}} {
		for _, c := range []struct{ size, games int }{{1, 100}, {4, 100}, {8, 100}, {16, 100}, {1000, 100}, {2000, 20}} {
			b.Run(fmt.Sprintf("%s/batch=%d/games=%d", schema.name, c.size, c.games), func(b *testing.B) {
				benchCommitFloor(b, schema.ddl, c.size, c.games)
			})
		}
	}
}

func benchCommitFloor(b *testing.B, ddl string, size, games int) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "floor.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=journal_mode(WAL)"+
		"&_pragma=synchronous(NORMAL)&_pragma=temp_store(MEMORY)&_pragma=cache_size(-16384)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		b.Fatal(err)
	}
	// As in the store, checkpoints run on their own connection and thread
	// (store/checkpoint.go), not inside the measured commits.
	if _, err := db.ExecContext(ctx, `PRAGMA wal_autocheckpoint(0)`); err != nil {
		b.Fatal(err)
	}
	ckpt, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	defer ckpt.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				ckpt.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`) // busy is fine: next tick
			}
		}
	}()
	defer wg.Wait()
	defer close(stop)
	const maxRows = 128
	stmts := map[int]*sql.Stmt{}
	for n := 1; n <= maxRows; n <<= 1 {
		q := `INSERT INTO lines (evt_id, game, kind, payload, html, stream_id, renderer, attempts, at, stored_at) VALUES ` +
			strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?,?,?,?,?),", n), ",") + ` ON CONFLICT DO NOTHING`
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		stmts[n] = st
	}
	// The rows are made before the clock starts: the sizes of the latency
	// benchmark's lines (docs/benchmarks-journal.md), EVT ids a millisecond apart.
	html, payload := strings.Repeat("h", 455), strings.Repeat("p", 103)
	m := event.NewMinter(7)
	t0 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	rows := make([][]any, b.N)
	for i := range rows {
		rows[i] = []any{m.Next(t0.Add(time.Duration(i) * time.Millisecond)), fmt.Sprintf("game-%d", i%games),
			"guess", payload, html, fmt.Sprintf("%d-0", i+1), "r1", 1, int64(i), int64(i)}
	}
	args := make([]any, 0, 10*maxRows)
	// The thread's own CPU: the driver runs SQLite on the calling thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	cpu0 := threadCPU()
	for i := 0; i < b.N; {
		end := min(i+size, b.N)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		for i < end {
			n := maxRows
			for n > end-i {
				n >>= 1
			}
			args = args[:0]
			for _, r := range rows[i : i+n] {
				args = append(args, r...)
			}
			if _, err := tx.Stmt(stmts[n]).ExecContext(ctx, args...); err != nil {
				b.Fatal(err)
			}
			i += n
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((threadCPU()-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/event")
}

// threadCPU is the CPU time of the calling OS thread (RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // RUSAGE_THREAD
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
