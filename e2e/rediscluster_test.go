package e2e_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestRedisCluster: on a Redis Cluster of 3 masters, each with a replica,
// two renderers follow the simulator writing 60 games (a few entries
// malformed). During the run one master is failed over gracefully (CLUSTER
// FAILOVER), one is SIGKILLed so its replica takes over, and one game's
// slot is resharded with MIGRATE. In the end every well-formed entry of
// every stream is shown exactly once, every malformed one is
// dead-lettered, and nothing is pending or unread.
func TestRedisCluster(t *testing.T) {
	// The short form's 36 s at 100 entries/s let the faults land mid-run;
	// the long form (make chaos) repeats them, with renderer kills, for
	// about three minutes.
	games, events, rate := 60, 60, 100
	if *chaosLong {
		events, rate = 1000, 300
	}
	rc := redistest.MustStartCluster(t)
	rdb := rc.Client(t)
	c := &cluster{tb: t, url: rc.URL(), dbPath: filepath.Join(t.TempDir(), "feed.db"), group: "feed",
		renderers: map[string]*renderer{}}
	// The plain URL of one node for the second: it must find the rest.
	r1 := c.start("r1", "-sweep-every", "2s")
	c.url = "redis://" + rc.Nodes[1].Addr
	r2 := c.start("r2", "-sweep-every", "2s")

	sim := proctest.Start(t, "gamesim", "gamesim", []string{"-redis", rc.URL(),
		"-games", fmt.Sprint(games), "-events", fmt.Sprint(events), "-rate", fmt.Sprint(rate),
		"-seed", "21", "-prefix", "cl", "-bad", "0.03"})
	progress := func(what string, more int64) {
		t.Helper()
		n0 := countLines(t, c.dbPath)
		wait.For(t, 60*time.Second, fmt.Sprintf("%d more lines stored %s", more, what), func() bool {
			return countLines(t, c.dbPath) >= n0+more || sim.Exited()
		})
	}
	slotOf := func(game string) int { return rc.Slot(t, event.StreamKey(game)) }

	progress("at start", 200)
	for round := 0; ; round++ {
		failed := rc.Failover(t, rc.MasterOfSlot(t, slotOf("cl-1")))
		t.Logf("round %d: failover: %s is master of cl-1's slot", round, failed.Addr)
		progress("after the failover", 200)

		victim := rc.MasterOfSlot(t, slotOf("cl-2"))
		heir := rc.KillMaster(t, victim)
		t.Logf("round %d: killed master %s; %s took over", round, victim.Addr, heir.Addr)
		progress("after the kill", 200)

		if !*chaosLong && sim.Exited() {
			t.Fatal("the simulator finished before the faults were over: the test proves nothing")
		}
		game := gamesim.GameName("cl", 3+round%(games-3))
		slot := slotOf(game)
		from := rc.MasterOfSlot(t, slot)
		to := slices.IndexFunc(rc.Masters(t), func(s *redistest.Server) bool { return s != from })
		moved := rc.MoveSlot(t, slot, rc.Masters(t)[to])
		t.Logf("round %d: moved %s's slot %d (%d keys) from %s, simulator still running: %v",
			round, game, slot, moved, from.Addr, !sim.Exited())
		if moved == 0 {
			t.Fatalf("slot %d of %s held no key", slot, game)
		}
		if !*chaosLong || sim.Exited() {
			break
		}
		// The long form: the killed node comes back as a replica, and a
		// renderer dies and comes back.
		victim.Start(t)
		rc.WaitReplicas(t, 3)
		r := []*renderer{r1, r2}[round%2]
		r.Kill()
		c.restart(r)
		progress("after a renderer was killed", 200)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := sim.Wait(ctx); err != nil {
		t.Fatalf("gamesim: %v", err)
	}
	names := make([]string, games)
	for i := range names {
		names[i] = gamesim.GameName("cl", i+1)
	}
	checkAllHandled(t, rdb, c.dbPath, c.group, names, 3*time.Minute)
}

// checkAllHandled waits until, for every game, the store at dbPath holds
// every well-formed entry of its stream, its dead-letter stream holds every
// malformed one, and group has nothing pending or unread on it; then it
// checks that the store holds nothing else.
func checkAllHandled(t *testing.T, rdb redis.UniversalClient, dbPath, group string, games []string, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	var total, dead int
	for _, g := range games {
		good, bad := classify(t, rdb, g)
		total += len(good) + len(bad)
		dead += len(bad)
		wantGood := slices.Clone(good)
		slices.Sort(wantGood)
		var why string
		wait.Until(t, timeout, func() bool {
			why = handled(ctx, t, rdb, dbPath, group, g, wantGood, bad)
			return why == ""
		}, func() string { return g + ": " + why })
	}
	t.Logf("%d games, %d entries: %d shown, %d dead-lettered, nothing pending", len(games), total, total-dead, dead)
}

// handled says what is still missing for game ("" when nothing is).
func handled(ctx context.Context, tb testing.TB, rdb redis.UniversalClient, dbPath, group, game string, good, bad []string) string {
	stored := storeIDsOf(tb, dbPath, game)
	if !slices.Equal(stored, good) {
		return fmt.Sprintf("store holds %d lines, the stream %d well-formed entries", len(stored), len(good))
	}
	dl, err := rdb.XRange(ctx, event.DeadKey(game), "-", "+").Result()
	if err != nil {
		return "dead letters: " + err.Error()
	}
	lettered := map[string]bool{}
	for _, x := range dl {
		if pos, ok := x.Values["dead_stream_id"].(string); ok {
			lettered[pos] = true
		}
	}
	for _, pos := range bad {
		if !lettered[pos] {
			return "malformed entry " + pos + " not dead-lettered"
		}
	}
	gs, err := rdb.XInfoGroups(ctx, event.StreamKey(game)).Result()
	if err != nil {
		return "groups: " + err.Error()
	}
	// Read up to the stream's last id: XINFO's lag is not used, as a
	// failover or a slot migration can leave it wrong (entries-read).
	info, err := rdb.XInfoStream(ctx, event.StreamKey(game)).Result()
	if err != nil {
		return "stream: " + err.Error()
	}
	for _, g := range gs {
		if g.Name == group {
			if g.Pending != 0 || event.ComparePos(g.LastDeliveredID, info.LastGeneratedID) < 0 {
				return fmt.Sprintf("group %s: %d pending, delivered up to %s of %s", group, g.Pending, g.LastDeliveredID, info.LastGeneratedID)
			}
			return ""
		}
	}
	return "no group " + group
}

// countLines counts the lines of the store at path.
func countLines(tb testing.TB, path string) int64 {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
		return 0 // not created yet
	}
	return n
}
