package e2e_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// forgedGame is a game whose stream holds a genuine entry, stored, and
// after it an entry at a stream id forged 12 s ahead, dead-lettered by the
// renderers as a future id, whose time has now come.
type forgedGame struct {
	game      string
	genuine   string // EVT id of the stored entry
	forged    string // EVT id of the dead-lettered one
	forgedPos string // its stream position
	dead      feed.DeadLetter
}

// forgeDeadLettered writes game's two entries under c's running renderers,
// started with -future-bound 1s, waits until the genuine one is stored
// and the forged one dead-lettered, and then until the clock has passed
// the forged stream id's time: judged afresh from then on, the forged
// entry passes (docs/store.md, "Newer-wins").
func forgeDeadLettered(t *testing.T, c *cluster, game string) forgedGame {
	t.Helper()
	ctx := context.Background()
	w := c.writer(game)
	f := forgedGame{game: game, genuine: w.mint()}
	w.add(f.genuine, event.KindChat, "player", "ada", "text", "hi")
	ahead := time.UnixMilli(time.Now().Add(12 * time.Second).UnixMilli())
	f.forged = event.NewMinter(22).Next(ahead)
	chat := gamesim.Event{Kind: event.KindChat, Fields: []gamesim.Field{{Name: "player", Value: "eve"}, {Name: "text", Value: "first"}}}
	f.forgedPos = fmt.Sprintf("%d-0", ahead.UnixMilli())
	if err := c.rdb.XAdd(ctx, &redis.XAddArgs{Stream: event.StreamKey(game), ID: f.forgedPos, Values: chat.Entry(f.forged, ahead)}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: game}).Err(); err != nil {
		t.Fatal(err)
	}
	ids, dead := waitJudged(t, c, game, 2)
	if !equal(ids, []string{f.genuine}) || len(dead) != 1 || dead[0].EvtID != f.forged || !strings.HasPrefix(dead[0].Reason, "future id") {
		t.Fatalf("live renderer: stored %v, dead letters %+v; want %s stored and %s dead-lettered as a future id (read within 10 s of its write)",
			ids, dead, f.genuine, f.forged)
	}
	f.dead = dead[0]
	wait.Until(t, 30*time.Second, func() bool { return time.Now().After(ahead) },
		func() string { return "the clock to pass the forged stream id's time" })
	return f
}

// waitJudged waits until the renderers of c have judged n entries of
// game, each stored or dead-lettered, and returns the EVT ids stored and
// the dead letters.
func waitJudged(t *testing.T, c *cluster, game string, n int) ([]string, []feed.DeadLetter) {
	t.Helper()
	var ids []string
	var dead []feed.DeadLetter
	wait.Until(t, 20*time.Second, func() bool {
		ids = c.storeIDs(game)
		var err error
		dead, err = feed.ListDead(context.Background(), c.rdb, event.DeadKey(game), 0)
		return err == nil && len(ids)+len(dead) == n
	}, func() string {
		return fmt.Sprintf("%d entries stored or dead-lettered (%d stored, %d dead)", n, len(ids), len(dead))
	})
	return ids, dead
}

// streamIDOf returns the stream position the store at path recorded for
// the line of game's EVT id ("" when it has none).
func streamIDOf(tb testing.TB, path, game, evtID string) string {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var pos string
	err = db.QueryRow(`SELECT stream_id FROM events WHERE game = ? AND evt_id = ?`, game, evtID).Scan(&pos)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		tb.Fatalf("stream id of %s: %v", evtID, err)
	}
	return pos
}

// lastPos returns the position of the last entry of game's stream.
func lastPos(t *testing.T, c *cluster, game string) string {
	t.Helper()
	last, err := c.rdb.XRevRangeN(context.Background(), event.StreamKey(game), "+", "-", 1).Result()
	if err != nil || len(last) != 1 {
		t.Fatalf("last entry of %s: %v", game, err)
	}
	return last[0].ID
}

// waitSettled waits until the group has delivered game's stream up to its
// last entry, last, and has nothing pending there: every entry handed out
// since a rewind was handled or dead-lettered, and its line committed
// before its ack.
func waitSettled(t *testing.T, c *cluster, game, last, what string) {
	t.Helper()
	proctest.WaitFor(t, 20*time.Second, func() bool {
		gs, err := c.rdb.XInfoGroups(context.Background(), event.StreamKey(game)).Result()
		return err == nil && len(gs) == 1 && gs[0].LastDeliveredID == last && gs[0].Pending == 0
	}, "%s: the group at %s with nothing pending", what, last)
}

// TestReplaySkipsDeadLetteredPositions: a replay (feedctl replay rewinds
// the group, and the renderers re-deliver every retained entry) settles
// the positions the renderers dead-lettered as the live read settled them,
// and does not judge them afresh: the forged entry of forgeDeadLettered,
// re-delivered after its time had come, passed and was stored, a line the
// live read never stored. A letter requeued meanwhile is a new entry at a
// new position, and the replay takes that copy, not the original.
func TestReplaySkipsDeadLetteredPositions(t *testing.T) {
	c := newCluster(t)
	c.start("r1", "-future-bound", "1s")
	f := forgeDeadLettered(t, c, "forged-replay")
	ctl := func(args ...string) string {
		t.Helper()
		return run(t, "feedctl", append([]string{"-redis", c.redis.URL(), "-future-bound", "1s"}, args...)...)
	}

	ctl("replay", "-game", f.game, "-yes")
	waitSettled(t, c, f.game, f.forgedPos, "the replay")
	if got := c.storeIDs(f.game); !equal(got, []string{f.genuine}) {
		t.Errorf("after the replay the store holds %v; want %s only, the dead-lettered position not judged again", got, f.genuine)
	}
	if dead, err := feed.ListDead(context.Background(), c.rdb, event.DeadKey(f.game), 0); err != nil || len(dead) != 1 {
		t.Errorf("after the replay: dead letters %+v (%v); want the one letter, not a second", dead, err)
	}

	// Requeued, the letter is a new entry at a new position, stored live;
	// a second replay re-delivers the original position before it, which
	// is skipped again, and the copy, which is taken (a no-op now).
	ctl("dead", "requeue", "-game", f.game, "-id", f.dead.DeadID)
	copyPos := lastPos(t, c, f.game)
	if copyPos == f.forgedPos {
		t.Fatalf("the requeue appended nothing after %s", f.forgedPos)
	}
	waitSettled(t, c, f.game, copyPos, "the requeued copy")
	ctl("replay", "-game", f.game, "-yes")
	waitSettled(t, c, f.game, copyPos, "the replay after the requeue")
	both := []string{f.genuine, f.forged}
	sort.Strings(both)
	if got := c.storeIDs(f.game); !equal(got, both) {
		t.Fatalf("after the requeue and replay the store holds %v; want %v", got, both)
	}
	// The original and the copy have the same EVT id and payload: the
	// line records which position it was stored from.
	if pos := streamIDOf(t, c.dbPath, f.game, f.forged); pos != copyPos {
		t.Errorf("the line of %s was stored from position %s; want the requeued copy's %s, not the dead-lettered original %s",
			f.forged, pos, copyPos, f.forgedPos)
	}
}

// TestReplayWhileStoppedSkipsDeadLetteredPositions: a replay run while
// every renderer of the group is stopped (a deploy) is noticed by the
// renderer started after it, through its store's position of the game:
// the dead-lettered position is settled as a letter already written, not
// judged afresh. Neither a ">" read nor the group's cursor, back at 0,
// showed the restarted renderer the rewind, and the forged entry, read
// after its time had come, passed and was stored.
func TestReplayWhileStoppedSkipsDeadLetteredPositions(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1", "-future-bound", "1s")
	f := forgeDeadLettered(t, c, "forged-stopped")
	// A genuine line after the letter: the store's position of the game
	// is then past the letter's.
	w := c.writer(f.game)
	later := w.chat("ada", "again")
	c.waitStored(f.game, []string{f.genuine, later}, 20*time.Second)
	last := lastPos(t, c, f.game)
	waitSettled(t, c, f.game, last, "the line after the letter")

	if err := r.Term(10 * time.Second); err != nil {
		t.Fatalf("stop r1: %v", err)
	}
	run(t, "feedctl", "-redis", c.redis.URL(), "-future-bound", "1s", "replay", "-game", f.game, "-yes")
	c.restart(r)
	waitSettled(t, c, f.game, last, "the replay after the restart")
	want := []string{f.genuine, later}
	sort.Strings(want)
	if got := c.storeIDs(f.game); !equal(got, want) {
		t.Errorf("after the replay the store holds %v; want %v, the dead-lettered position not judged again", got, want)
	}
	if dead, err := feed.ListDead(context.Background(), c.rdb, event.DeadKey(f.game), 0); err != nil || len(dead) != 1 {
		t.Errorf("after the replay: dead letters %+v (%v); want the one letter, not a second", dead, err)
	}
}

// TestCatchUpSkipsDeadLetteredPositions: a renderer's catch-up (its store
// lacks entries the group acked, here a lost store file, so it re-reads
// the stream with XRANGE, docs/reader-law.md) skips the positions the
// renderers dead-lettered, as the live read and feedctl rebuild do: the
// forged entry of forgeDeadLettered, re-read after its time had come,
// passed and was stored beside its neighbours. A letter requeued since is
// a new entry at a new position, and the catch-up takes that copy, not the
// original.
func TestCatchUpSkipsDeadLetteredPositions(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1", "-future-bound", "1s")
	f := forgeDeadLettered(t, c, "forged-catchup")
	loseStore := func() {
		t.Helper()
		if err := r.Term(10 * time.Second); err != nil {
			t.Fatalf("stop r1: %v", err)
		}
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(c.dbPath + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
	}
	// caughtUp waits for the catch-up's n-th log line: it is written once
	// the catch-up has ended, its pages committed.
	caughtUp := func(n int) {
		t.Helper()
		const line = "store was behind its group; caught up from the streams"
		proctest.WaitFor(t, 20*time.Second, func() bool { return strings.Count(r.Output(), line) >= n },
			"the renderer's catch-up number %d to end", n)
	}

	loseStore()
	c.restart(r)
	caughtUp(1)
	if got := c.storeIDs(f.game); !equal(got, []string{f.genuine}) {
		t.Errorf("after the catch-up the store holds %v; want %s only, the dead-lettered position not judged again", got, f.genuine)
	}

	run(t, "feedctl", "-redis", c.redis.URL(), "dead", "requeue", "-game", f.game, "-id", f.dead.DeadID)
	copyPos := lastPos(t, c, f.game)
	both := []string{f.genuine, f.forged}
	sort.Strings(both)
	c.waitStored(f.game, both, 20*time.Second)
	waitSettled(t, c, f.game, copyPos, "the requeued copy")

	loseStore()
	c.restart(r)
	caughtUp(2)
	if got := c.storeIDs(f.game); !equal(got, both) {
		t.Fatalf("after the second catch-up the store holds %v; want %v", got, both)
	}
	if pos := streamIDOf(t, c.dbPath, f.game, f.forged); pos != copyPos {
		t.Errorf("the line of %s was stored from position %s; want the requeued copy's %s, not the dead-lettered original %s",
			f.forged, pos, copyPos, f.forgedPos)
	}
}
