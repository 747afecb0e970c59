package e2e_test

import (
	"context"
	"net/http"
	"sort"
	"sync/atomic"
	"testing"
	"time"
)

// TestChaosClientReload: the chaos clients' page load (chaosClient.reload)
// takes a real renderer's game page and its older-lines fragments (250
// lines: a page and two fragments of 100) as the timeline, every stored
// line once, and finds them shown newest first in EVT-id order. It is the
// check TestChaos relies on for a reloaded timeline; a page that showed
// its lines out of order or twice is reported by reload (cl.errs), where
// the set it gathers would still be whole.
func TestChaosClientReload(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1")
	w := c.writer("reload")
	for range 250 {
		w.chat("ada", "a line")
	}
	c.waitStored("reload", w.ids, 20*time.Second)

	var errs errorList
	var lost atomic.Bool
	cl := &chaosClient{game: "reload", addrs: []string{r.addr}, errs: &errs, lost: &lost, seen: map[string]int64{}}
	seq, store, err := cl.reload(context.Background(), http.DefaultClient, r.addr)
	if err != nil {
		t.Fatal(err)
	}
	if seq <= 0 || store == "" {
		t.Errorf("reload: seq %d, store %q", seq, store)
	}
	errs.report(t, "reload")
	got := make([]string, 0, len(cl.seen))
	for id := range cl.seen {
		got = append(got, id)
	}
	sort.Strings(got)
	want := c.storeIDs("reload")
	if missing, extra := diff(want, got); len(missing)+len(extra) > 0 {
		t.Errorf("reload gathered %d lines of the store's %d: missing %s, not stored %s",
			len(got), len(want), describe(missing), describe(extra))
	}
}
