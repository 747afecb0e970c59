package store_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/codemojex/feed/store"
)

// Child process modes, chosen by envHelper.
const (
	envHelper = "STORE_TEST_HELPER"
	envPath   = "STORE_TEST_PATH"
	envSeed   = "STORE_TEST_SEED"
	envChild  = "STORE_TEST_CHILD"
)

// batchReport is one committed batch as a child saw it.
type batchReport struct {
	Inserted []string `json:"inserted"` // EVT ids this batch really inserted
	Seqs     []int64  `json:"seqs"`     // their seqs, in batch order
	// Busy is set on the last report only: the busy errors the child's
	// store retried (from its metrics), to show the retry path ran.
	Busy float64 `json:"busy,omitempty"`
}

// TestHelperProcess is not a test: it is the body of the child processes
// the multi-process tests start by re-executing this test binary.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		return
	}
	err := helperMain(t, mode)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

func helperMain(t *testing.T, mode string) error {
	ctx := context.Background()
	path := os.Getenv(envPath)
	// Block until the parent closes stdin, so all children start at once.
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return err
	}
	switch mode {
	case "open":
		db, err := store.Open(ctx, path)
		if err != nil {
			return err
		}
		return db.Close()
	case "upsert":
		seed, _ := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
		child, _ := strconv.ParseUint(os.Getenv(envChild), 10, 64)
		// A 1ms busy timeout hands almost every lock wait to the store's
		// own retry loop, which is what this proof is about.
		db, err := store.OpenWith(ctx, path, store.Options{BusyTimeout: time.Millisecond, Logger: quiet})
		if err != nil {
			return err
		}
		defer db.Close()
		evs := genGames(t, seed, 5)
		r := rand.New(rand.NewPCG(seed, child))
		enc := json.NewEncoder(os.Stdout)
		for _, b := range deliveries(evs, r, 60) {
			res, err := db.Upsert(ctx, b)
			if err != nil {
				return fmt.Errorf("upsert: %w", err)
			}
			rep := batchReport{}
			for i, x := range res {
				if x.Err != nil {
					return fmt.Errorf("upsert %s: %w", b[i].EvtID, x.Err)
				}
				if x.Inserted {
					rep.Inserted = append(rep.Inserted, b[i].EvtID)
					rep.Seqs = append(rep.Seqs, x.Seq)
				}
			}
			if err := enc.Encode(rep); err != nil {
				return err
			}
		}
		return enc.Encode(batchReport{Busy: busyRetries()})
	case "newer":
		return helperNewer(ctx, path)
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// busyRetries sums the store's busy-retry counter from this process's
// default Prometheus registry.
func busyRetries() float64 {
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return -1
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == "codemojex_store_busy_retries_total" {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// child is a started helper process.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Scanner
	stderr *strings.Builder
	lines  []string
}

// startChildren starts n helpers in mode, all blocked on stdin; closing
// their stdin (release) lets them go at once.
func startChildren(t *testing.T, n int, mode, path string, env ...string) (children []*child, release func()) {
	t.Helper()
	for i := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envHelper+"="+mode, envPath+"="+path, envChild+"="+strconv.Itoa(i))
		cmd.Env = append(cmd.Env, env...)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c := &child{cmd: cmd, stdin: stdin, stdout: bufio.NewScanner(out), stderr: &strings.Builder{}}
		c.stdout.Buffer(make([]byte, 1<<20), 1<<24)
		cmd.Stderr = c.stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
		children = append(children, c)
	}
	return children, func() {
		for _, c := range children {
			c.stdin.Close()
		}
	}
}

// wait reads a child's stdout to the end and waits for it, failing the
// test on a non-zero exit.
func (c *child) wait(t *testing.T, name string) {
	t.Helper()
	for c.stdout.Scan() {
		c.lines = append(c.lines, c.stdout.Text())
	}
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("%s: %v\nstderr:\n%s", name, err, c.stderr.String())
	}
}

// TestThreeProcessesUpsertConcurrently is Proof 2 of issue 4: three
// processes upsert overlapping, shuffled, duplicated batches into one file
// at once with a 1ms busy timeout. No error surfaces; each EVT id is stored
// once and inserted by exactly one process; each process's seqs grow batch
// after batch; a tailer following seq while they write sees every line
// exactly once (which fails if seq ever went backwards in commit order);
// and the result equals in-order delivery into a fresh store.
func TestThreeProcessesUpsertConcurrently(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	const seed = 77
	evs := genGames(t, seed, 5)

	db := MustOpen(t, path) // creates the file; also the tailer's reader
	children, release := startChildren(t, 3, "upsert", path, envSeed+"="+strconv.Itoa(seed))

	// Tail by seq while the children write.
	var tail []store.Line
	tailErr := make(chan error, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var cursor int64
		final := false
		for {
			lines, err := db.Since(ctx, cursor, 200)
			if err != nil {
				tailErr <- err
				return
			}
			for _, l := range lines {
				if l.Seq <= cursor {
					tailErr <- fmt.Errorf("tailer got seq %d after cursor %d", l.Seq, cursor)
					return
				}
				cursor = l.Seq
			}
			tail = append(tail, lines...)
			if len(lines) > 0 {
				continue
			}
			if final {
				tailErr <- nil
				return
			}
			select {
			case <-done:
				final = true // one more pass after the writers are gone
			case <-time.After(time.Millisecond):
			}
		}
	}()

	release()
	for i, c := range children {
		c.wait(t, "child "+strconv.Itoa(i))
	}
	close(done)
	wg.Wait()
	if err := <-tailErr; err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		return
	}

	insertedBy := map[string]int{}
	var busy float64
	for i, c := range children {
		var last int64
		for _, line := range c.lines {
			var rep batchReport
			if err := json.Unmarshal([]byte(line), &rep); err != nil {
				t.Fatalf("child %d: %v: %q", i, err, line)
			}
			busy += rep.Busy
			for j, id := range rep.Inserted {
				insertedBy[id]++
				if rep.Seqs[j] <= last {
					t.Errorf("child %d: seq %d after %d: not increasing in commit order", i, rep.Seqs[j], last)
				}
				last = rep.Seqs[j]
			}
		}
	}
	t.Logf("%d events; batches per child: %d, %d, %d; %v busy errors retried; tailer read %d lines",
		len(evs), len(children[0].lines)-1, len(children[1].lines)-1, len(children[2].lines)-1, busy, len(tail))
	if len(insertedBy) != len(evs) {
		t.Errorf("%d EVT ids inserted, want %d", len(insertedBy), len(evs))
	}
	for id, n := range insertedBy {
		if n != 1 {
			t.Errorf("%s inserted %d times", id, n)
		}
	}
	if n, err := db.Count(ctx); err != nil || n != int64(len(evs)) {
		t.Errorf("Count = %d, %v; want %d", n, err, len(evs))
	}
	seen := map[string]bool{}
	for _, l := range tail {
		if seen[l.EvtID] {
			t.Errorf("tailer saw %s twice", l.EvtID)
		}
		seen[l.EvtID] = true
	}
	if len(seen) != len(evs) {
		t.Errorf("tailer saw %d lines, want %d: a line committed behind its cursor", len(seen), len(evs))
	}

	ref := MustOpen(t, "")
	for _, b := range inBatches(evs, 250) {
		mustUpsert(t, ref, b)
	}
	want, err := ref.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := store.Diff(want, got, 10); len(d) > 0 {
		t.Errorf("concurrent store differs from in-order delivery:\n%s", strings.Join(d, "\n"))
	}
}

// TestMigrationsConcurrentFirstStart is Proof 3 (first half): three
// processes open the same new file at the same moment; all succeed and
// every migration is recorded once.
func TestMigrationsConcurrentFirstStart(t *testing.T) {
	for round := range 3 {
		path := filepath.Join(t.TempDir(), "sub", "dir", "feed.db") // Open creates the directories
		children, release := startChildren(t, 3, "open", path)
		release()
		for i, c := range children {
			c.wait(t, fmt.Sprintf("round %d child %d", round, i))
		}
		raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		var n, distinct, top int
		if err := raw.QueryRow(`SELECT count(*), count(DISTINCT version), max(version) FROM schema_migrations`).
			Scan(&n, &distinct, &top); err != nil {
			t.Fatal(err)
		}
		var mode string
		if err := raw.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		if n != distinct || top != store.LatestSchema() || n != store.LatestSchema() {
			t.Errorf("schema_migrations: %d rows, %d distinct, top %d; want each of 1..%d once",
				n, distinct, top, store.LatestSchema())
		}
		if mode != "wal" {
			t.Errorf("journal_mode = %q, want wal", mode)
		}
	}
}

// TestMigrationsRefuseNewerSchema is Proof 3 (second half): a file that
// records a migration this binary does not know is refused, clearly.
func TestMigrationsRefuseNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	newer := store.LatestSchema() + 1
	if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_the_future.sql', 0)`, newer); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	db, err = store.Open(ctx, path)
	if !errors.Is(err, store.ErrSchemaNewer) {
		if db != nil {
			db.Close()
		}
		t.Fatalf("Open = %v, want ErrSchemaNewer", err)
	}
	if !strings.Contains(err.Error(), strconv.Itoa(newer)) {
		t.Errorf("error %q does not name the file's version %d", err, newer)
	}
}
