package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/storefile"
	"github.com/codemojex/feed/store"
)

// TestWALRemovedUnderRunningStore: the store's -wal and -shm are removed
// while it runs (an operator "cleaning up", a restore half done with a
// replica still up) and another process opens the file, as a restarted
// replica does: it makes a new WAL and index and writes beside this one,
// unaware of its locks. This process must refuse to write from then on
// (ErrReplaced, as for a deleted file): every line either process
// acknowledged is in the file afterwards, once, and the file is sound.
func TestWALRemovedUnderRunningStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	db, err := store.OpenWith(ctx, path, store.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mine := genGames(t, 5, 2)
	half := len(mine) / 2
	acked := map[string]bool{}
	for _, b := range inBatches(mine[:half], 50) {
		mustUpsert(t, db, b)
		for _, e := range b {
			acked[e.Game+" "+e.EvtID] = true
		}
	}
	// Quiet: every commit so far is in the main file.
	storefile.Checkpointed(t, path)
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil {
			t.Fatal(err)
		}
	}
	// CheckFile looks at them at most every 100 ms.
	waitFor(t, 5*time.Second, func() bool { return errors.Is(db.CheckFile(), store.ErrReplaced) })

	// Another process opens the file and writes its games meanwhile.
	const seed = 77
	children, release := startChildren(t, 1, "upsert", path, envSeed+"="+strconv.Itoa(seed))
	release()
	theirs := map[string]store.Event{}
	for _, e := range genGames(t, seed, 5) {
		theirs[e.EvtID] = e
	}
	for _, b := range inBatches(mine[half:], 20) {
		res, err := db.Upsert(ctx, b)
		if err != nil {
			if !errors.Is(err, store.ErrReplaced) || !store.Unavailable(err) {
				t.Errorf("upsert after -wal and -shm were removed: %v, want an unavailable ErrReplaced", err)
			}
			continue
		}
		for i, r := range res {
			if r.Inserted {
				acked[b[i].Game+" "+b[i].EvtID] = true
			}
		}
	}
	children[0].wait(t, "child")
	for _, line := range children[0].lines {
		var rep batchReport
		if err := json.Unmarshal([]byte(line), &rep); err != nil {
			t.Fatal(err)
		}
		for _, id := range rep.Inserted {
			acked[theirs[id].Game+" "+id] = true
		}
	}
	if err := db.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	after := MustOpen(t, path)
	check := mustRaw(t, path)
	var ok string
	if err := check.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q, %v", ok, err)
	}
	rows, err := check.Query(`SELECT game, evt_id, count(*) FROM events GROUP BY game, evt_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	stored := map[string]bool{}
	for rows.Next() {
		var g, id string
		var n int
		if err := rows.Scan(&g, &id, &n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%s %s stored %d times", g, id, n)
		}
		stored[g+" "+id] = true
	}
	lost := 0
	for k := range acked {
		if !stored[k] {
			lost++
		}
	}
	if n, _ := after.Count(ctx); lost > 0 {
		t.Errorf("%d of %d acknowledged lines lost (%d stored)", lost, len(acked), n)
	}
}
