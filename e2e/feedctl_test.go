package e2e_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/store"
)

// run runs a built binary to completion and returns its output.
func run(tb testing.TB, bin string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(filepath.Join(proctest.Binaries(tb), bin), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
	return string(out)
}

// classify splits a game's stream into well-formed and malformed entries
// by the renderer's own rules.
func classify(tb testing.TB, rdb redis.UniversalClient, game string) (good []string, bad []string) {
	tb.Helper()
	key := event.StreamKey(game)
	xs, err := rdb.XRange(context.Background(), key, "-", "+").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, x := range xs {
		m, err := feed.Decode(key, x)
		if err == nil {
			err = event.Validate(m.Kind, m.Payload)
		}
		if err != nil {
			bad = append(bad, x.ID)
			continue
		}
		good = append(good, m.ID)
	}
	return good, bad
}

func openStore(tb testing.TB, path string) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func snapshot(tb testing.TB, path string) store.Snapshot {
	tb.Helper()
	s, err := openStore(tb, path).Snapshot(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestRebuildAndReplay: feedctl rebuild produces a store equal to the live
// one, and feedctl replay re-delivers a finished game without changing the
// store (issue 4, proofs 4 and 5).
func TestRebuildAndReplay(t *testing.T) {
	c := newCluster(t)
	r1, r2 := c.start("r1"), c.start("r2")
	run(t, "gamesim", "-redis", c.redis.URL(), "-games", "3", "-events", "150", "-rate", "0", "-seed", "11", "-prefix", "rb")
	games := []string{"rb-1", "rb-2", "rb-3"}
	for _, g := range games {
		good, _ := classify(t, c.rdb, g)
		c.waitStored(g, good, 20*time.Second)
	}
	live := snapshot(t, c.dbPath)

	rebuilt := filepath.Join(t.TempDir(), "rebuilt.db")
	for i := 0; i < 2; i++ { // safe to run again
		out := run(t, "feedctl", "-redis", c.redis.URL(), "rebuild", "-db", rebuilt, "-yes") // the second run is onto an existing file
		t.Logf("rebuild %d: %s", i, strings.TrimSpace(out))
		if d := store.Diff(live, snapshot(t, rebuilt), 10); len(d) > 0 {
			t.Fatalf("rebuilt store differs from live (run %d):\n%s", i, strings.Join(d, "\n"))
		}
	}

	ctx := context.Background()
	key := event.StreamKey("rb-2")
	last, err := c.rdb.XRevRangeN(ctx, key, "+", "-", 1).Result()
	if err != nil || len(last) != 1 {
		t.Fatalf("last entry of %s: %v", key, err)
	}
	// The renderers are stopped while the group is rewound: running, they
	// may read the whole stream again before the look below, and the
	// rewind would not show.
	for _, r := range []*renderer{r1, r2} {
		if err := r.Term(10 * time.Second); err != nil {
			t.Fatalf("stop %s: %v", r.name, err)
		}
	}
	out := run(t, "feedctl", "-redis", c.redis.URL(), "replay", "-game", "rb-2", "-yes")
	t.Log(strings.TrimSpace(out))
	gs, err := c.rdb.XInfoGroups(ctx, key).Result()
	if err != nil || len(gs) != 1 || gs[0].LastDeliveredID == last[0].ID {
		t.Fatalf("replay did not rewind the group: %+v %v", gs, err)
	}
	c.restart(r1)
	c.restart(r2)
	// After the rewind the group reaches the last entry again only by
	// re-delivering everything; pending 0 then means all of it was acked.
	proctest.WaitFor(t, 20*time.Second, func() bool {
		gs, err := c.rdb.XInfoGroups(ctx, key).Result()
		return err == nil && len(gs) == 1 && gs[0].LastDeliveredID == last[0].ID && gs[0].Pending == 0
	}, "replayed stream of rb-2 re-delivered and acked")
	if d := store.Diff(live, snapshot(t, c.dbPath), 10); len(d) > 0 {
		t.Fatalf("replay changed the store:\n%s", strings.Join(d, "\n"))
	}
}

var deadIDRe = regexp.MustCompile(`(?m)^(\d+-\d+)\s`)

// TestMalformedDeadLettered: malformed entries from gamesim -bad 0.2 end in
// the dead-letter stream with their reason, every good one is rendered, the
// renderer stays up, and feedctl dead requeue brings a fixed entry back
// (issue 3, proof 9).
func TestMalformedDeadLettered(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1")
	run(t, "gamesim", "-redis", c.redis.URL(), "-games", "2", "-events", "150", "-rate", "0", "-seed", "5", "-prefix", "bad", "-bad", "0.2")
	ctx := context.Background()
	for _, g := range []string{"bad-1", "bad-2"} {
		good, bad := classify(t, c.rdb, g)
		if len(bad) == 0 {
			t.Fatalf("%s: gamesim -bad 0.2 wrote no malformed entry", g)
		}
		c.waitStored(g, good, 20*time.Second)
		var dead []redis.XMessage
		proctest.WaitFor(t, 20*time.Second, func() bool {
			dead, _ = c.rdb.XRange(ctx, event.DeadKey(g), "-", "+").Result()
			return len(dead) >= len(bad)
		}, "%s: %d dead letters", g, len(bad))
		got := map[string]int{}
		for _, d := range dead {
			got[fmt.Sprint(d.Values["dead_stream_id"])]++
			if fmt.Sprint(d.Values["dead_reason"]) == "" {
				t.Fatalf("dead letter %s has no reason", d.ID)
			}
		}
		for _, pos := range bad {
			if got[pos] != 1 {
				t.Fatalf("%s: malformed entry %s dead-lettered %d times", g, pos, got[pos])
			}
		}
		if len(dead) != len(bad) {
			t.Fatalf("%s: %d dead letters for %d malformed entries", g, len(dead), len(bad))
		}
	}
	proctest.WaitHTTP(t, r.url("/healthz"), 200, time.Second)

	// An operator fixes a dead letter and requeues it.
	w := c.writer("bad-1")
	id := w.mint()
	w.add(id, "guess", "player", "ada", "round", "1", "guess", "🍎🍌🍇🍒", "exact", "abc", "near", "0")
	var deadID string
	proctest.WaitFor(t, 10*time.Second, func() bool {
		out := run(t, "feedctl", "-redis", c.redis.URL(), "dead", "list", "-game", "bad-1")
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, id) {
				if m := deadIDRe.FindStringSubmatch(line); m != nil {
					deadID = m[1]
					return true
				}
			}
		}
		return false
	}, "dead list to show %s", id)
	run(t, "feedctl", "-redis", c.redis.URL(), "dead", "requeue", "-game", "bad-1", "-id", deadID, "-set", "exact=1")
	good, _ := classify(t, c.rdb, "bad-1")
	c.waitStored("bad-1", good, 10*time.Second)
	found := false
	for _, g := range c.storeIDs("bad-1") {
		found = found || g == id
	}
	if !found {
		t.Fatalf("requeued, fixed entry %s is not in the store", id)
	}
}

// TestFutureIDJudgedByStreamTime: an entry whose EVT id is an hour ahead of
// its stream entry's time is a "future id" (-future-bound 10m) for a live
// renderer and for feedctl rebuild alike, whatever their clocks say. The
// entries are written with explicit stream ids three hours back, as a
// rebuild (or a replay) run hours after the writes sees them: the forged
// id's time has come by then, and a bound measured from the reader's clock
// would take it in, its newer-wins state ahead of every real event of that
// hour. The bound is measured from the stream id's time (docs/contracts.md).
func TestFutureIDJudgedByStreamTime(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	c.start("r1")
	const game = "fut"
	at := time.Now().Add(-3 * time.Hour)
	mint := event.NewMinter(21)
	genuine, forged := mint.Next(at), mint.Next(at.Add(time.Hour))
	for i, id := range []string{genuine, forged} {
		chat := gamesim.Event{Kind: event.KindChat, Fields: []gamesim.Field{{Name: "player", Value: "ada"}, {Name: "text", Value: "hi"}}}
		if err := c.rdb.XAdd(ctx, &redis.XAddArgs{Stream: event.StreamKey(game), ID: fmt.Sprintf("%d-%d", at.UnixMilli(), i+1),
			Values: chat.Entry(id, at)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: game}).Err(); err != nil {
		t.Fatal(err)
	}

	ids, dead := waitJudged(t, c, game, 2)
	if !equal(ids, []string{genuine}) || len(dead) != 1 || dead[0].EvtID != forged || !strings.HasPrefix(dead[0].Reason, "future id") {
		t.Errorf("live renderer: stored %v, dead letters %+v; want %s stored and %s dead-lettered as a future id", ids, dead, genuine, forged)
	}

	rebuilt := filepath.Join(t.TempDir(), "rebuilt.db")
	out := run(t, "feedctl", "-redis", c.redis.URL(), "rebuild", "-db", rebuilt)
	summary := strings.TrimSpace(out)
	summary = summary[strings.LastIndex(summary, "\n")+1:]
	if got := storeIDsOf(t, rebuilt, game); !equal(got, []string{genuine}) || !strings.Contains(summary, "1 skipped") {
		t.Errorf("rebuild: stored %v (%s); want %s only, the forged entry skipped", got, summary, genuine)
	}
}

// TestRebuildSkipsDeadLetteredPositions: feedctl rebuild skips the stream
// positions the renderers dead-lettered (the game's dead positions set),
// so that it rebuilds what the live store holds, and takes the copy a
// requeue appended at a new position.
//
// The entry's stream id is forged 12 s ahead of the clocks, its EVT id
// minted at that time, and the renderer's bound is 1 s: read at once it is
// measured from the renderer's clock plus the bound and dead-lettered as a
// future id. Nothing in the entry says its stream id was forged, so judged
// again once its time has come it passes: a rebuild run then stored it,
// a line the live store never had. Then the dead letter is requeued (it
// passes the check now), the renderer stores the copy, and a second
// rebuild takes that copy and still skips the original.
func TestRebuildSkipsDeadLetteredPositions(t *testing.T) {
	c := newCluster(t)
	c.start("r1", "-future-bound", "1s")
	f := forgeDeadLettered(t, c, "forged")
	game, genuine, forged, dead := f.game, f.genuine, f.forged, f.dead
	rebuild := func() (ids []string, summary string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "rebuilt.db")
		out := strings.TrimSpace(run(t, "feedctl", "-redis", c.redis.URL(), "-future-bound", "1s", "rebuild", "-db", path))
		return storeIDsOf(t, path, game), out[strings.LastIndex(out, "\n")+1:]
	}
	if got, summary := rebuild(); !equal(got, []string{genuine}) || !strings.Contains(summary, "1 skipped") {
		t.Errorf("rebuild after the forged time: stored %v (%s); want %s only, the dead-lettered position skipped", got, summary, genuine)
	}

	run(t, "feedctl", "-redis", c.redis.URL(), "-future-bound", "1s", "dead", "requeue", "-game", game, "-id", dead.DeadID)
	both := []string{genuine, forged}
	sort.Strings(both)
	c.waitStored(game, both, 20*time.Second)
	if got, summary := rebuild(); !equal(got, both) || !strings.Contains(summary, "3 entries") || !strings.Contains(summary, "1 skipped") {
		t.Errorf("rebuild after the requeue: stored %v (%s); want %v, the requeued copy taken and the original position skipped", got, summary, both)
	}
}
