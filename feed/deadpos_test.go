package feed_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// refuser is a handler that dead-letters (Poison) the entry of EVT id bad
// until let is set, as the renderer's pipeline refuses a stream id forged
// ahead of its clock until its time has come, and hands every other entry,
// and that one after, to rec. bad is set before the consumer opens.
type refuser struct {
	bad string
	let atomic.Bool
	rec *recorder
}

func (r *refuser) handler(ctx context.Context, m feed.Message) error {
	if m.ID == r.bad && !r.let.Load() {
		return feed.Poison(errors.New("not yet"))
	}
	return r.rec.handler(ctx, m)
}

// TestReplayedDeadPositionNotHanded: after a rewind of the group (feedctl
// replay), an entry the consumer dead-lettered is not handed to the
// handler again but settled as a dead letter already written (acked, no
// second letter, a duplicate counted); the other entries, and the copy a
// requeue appended at a new position, are handed again. The handler here
// refuses the entry at first and would take it later, as the renderer's
// pipeline does with a stream id forged ahead of its clock once its time
// has come: before, the replay handed it over and it was taken.
func TestReplayedDeadPositionNotHanded(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("replayed"), event.DeadKey("replayed")
	var rec recorder
	r := &refuser{rec: &rec}
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = r.handler
	before := add(t, rdb, s)
	bad := minter.Next(time.Now())
	r.bad = bad
	badPos := addRaw(t, rdb, s, "id", bad, "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "player", "eve", "text", "hi")
	after := add(t, rdb, s)
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "two entries handled, one dead-lettered", func() bool {
		return rec.count(before) == 1 && rec.count(after) == 1 && c.Stats().Dead == 1 && pending(t, rdb, s) == 0
	})
	r.let.Store(true)

	// Live batches ask nothing of the set: only a batch that re-reads
	// positions (a rewind) does. Asking every batch cost one more round
	// trip between read and commit.
	liveAsksNothing(t, rdb, s, &rec)

	replayed := func(last string) func() bool {
		return func() bool { return settledAt(rdb, s, last) }
	}
	last := lastID(t, rdb, s)
	if err := rdb.Do(ctx, "XGROUP", "SETID", s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the rewound stream re-delivered and settled", replayed(last))
	if n := rec.count(bad); n != 0 {
		t.Errorf("the dead-lettered entry was handed %d times after the replay; want none", n)
	}
	if rec.count(before) != 2 || rec.count(after) != 2 {
		t.Errorf("the other entries handed %d and %d times; want 2 each", rec.count(before), rec.count(after))
	}
	if st := c.Stats(); st.Dead != 1 || st.DeadDuplicates != 1 {
		t.Errorf("dead %d, duplicates %d; want 1 letter and 1 duplicate", st.Dead, st.DeadDuplicates)
	}
	dead, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil || len(dead) != 1 || dead[0].StreamID != badPos {
		t.Fatalf("dead letters %+v (%v); want the one of %s", dead, err, badPos)
	}

	// Requeued, the letter is a new entry at a new position: handed, and
	// handed again by a replay, while the original position is not.
	copyPos, err := feed.RequeueDead(ctx, rdb, s, dk, dead[0].DeadID)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the requeued copy handled", func() bool { return rec.count(bad) == 1 })
	waitFor(t, 10*time.Second, "the requeued copy acked", replayed(copyPos))
	if err := rdb.Do(ctx, "XGROUP", "SETID", s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the rewound stream re-delivered and settled again", replayed(copyPos))
	var from []string
	for _, m := range rec.all() {
		if m.ID == bad {
			from = append(from, m.Position)
		}
	}
	if len(from) != 2 || from[0] != copyPos || from[1] != copyPos {
		t.Errorf("the requeued EVT id was handed from positions %v; want the copy's %s twice, the original %s never", from, copyPos, badPos)
	}
	if st := c.Stats(); st.DeadDuplicates != 2 {
		t.Errorf("duplicates %d; want 2 (one a replay)", st.DeadDuplicates)
	}
}

// TestCatchUpSkipsDeadPositions: a catch-up (the store lacks every entry:
// no position) does not hand a dead-lettered position to the handler,
// and does hand the copy a requeue appended at a new position.
func TestCatchUpSkipsDeadPositions(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("caughtdead"), event.DeadKey("caughtdead")
	var first recorder
	r := &refuser{rec: &first}
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = r.handler
	before := add(t, rdb, s)
	bad := minter.Next(time.Now())
	r.bad = bad
	addRaw(t, rdb, s, "id", bad, "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "player", "eve", "text", "hi")
	after := add(t, rdb, s)
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "two entries handled, one dead-lettered", func() bool {
		return first.count(before) == 1 && first.count(after) == 1 && c.Stats().Dead == 1 && pending(t, rdb, s) == 0
	})
	dead, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("dead letters %+v (%v); want one", dead, err)
	}
	r.let.Store(true)
	copyPos, err := feed.RequeueDead(ctx, rdb, s, dk, dead[0].DeadID)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the requeued copy handled and acked", func() bool {
		return first.count(bad) == 1 && settledAt(rdb, s, copyPos)
	})
	c.Close()

	// A second consumer of the group whose store holds nothing.
	var rec recorder
	cfg2 := baseConfig(t, rdb, "r2", s)
	cfg2.Handler = rec.handler // it would take the entry now
	cfg2.Position = func(context.Context, string) (string, error) { return "", nil }
	c2 := mustOpen(t, cfg2)
	waitFor(t, 10*time.Second, "the catch-up", func() bool { return c2.Stats().CaughtUp == 4 })
	if rec.count(before) != 1 || rec.count(after) != 1 {
		t.Errorf("the stored entries handed %d and %d times by the catch-up; want once each", rec.count(before), rec.count(after))
	}
	var from []string
	for _, m := range rec.all() {
		if m.ID == bad {
			from = append(from, m.Position)
		}
	}
	if len(from) != 1 || from[0] != copyPos {
		t.Errorf("the requeued EVT id was caught up from positions %v; want the copy's %s only, not the dead-lettered original", from, copyPos)
	}
}

// TestCatchUpDeadSetUnreadable: a dead positions set that cannot be read
// (another type under its key, WRONGTYPE) does not stop a catch-up: its
// pages are judged afresh and the game is read on, as a batch of the live
// read is (skipDead). The error failed every turn's catch-up of the game,
// which is not read before its catch-up ends, so the game stalled.
func TestCatchUpDeadSetUnreadable(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("deadsetstring")
	if err := rdb.Set(ctx, feed.DeadPositionsKey(event.DeadKey("deadsetstring")), "not a set", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old := []string{add(t, rdb, s), add(t, rdb, s)}
	if err := rdb.XGroupCreate(ctx, s, group, "$").Err(); err != nil {
		t.Fatal(err)
	}
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = rec.handler
	cfg.Position = func(context.Context, string) (string, error) { return "", nil } // the store lacks every entry
	c := mustOpen(t, cfg)
	live := add(t, rdb, s)
	waitFor(t, 10*time.Second, "the old entries caught up and the new one read", func() bool {
		return rec.count(old[0]) == 1 && rec.count(old[1]) == 1 && rec.count(live) == 1
	})
	if st := c.Stats(); st.CaughtUp != 2 {
		t.Errorf("caught up %d entries; want the 2 written before the group", st.CaughtUp)
	}
}

// deadLetterOne writes to s an entry, then one that a consumer r1
// dead-letters (as the pipeline refuses a stream id forged ahead of its
// clock), and, when more, one more entry; it runs r1 until each is judged
// and closes it. It returns the EVT id dead-lettered and those handled.
func deadLetterOne(t *testing.T, rdb *redis.Client, s string, more bool) (bad string, handled []string) {
	t.Helper()
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.ID == bad {
			return feed.Poison(errors.New("not yet"))
		}
		return rec.handler(ctx, m)
	}
	handled = append(handled, add(t, rdb, s))
	bad = minter.Next(time.Now())
	addRaw(t, rdb, s, "id", bad, "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "player", "eve", "text", "hi")
	if more {
		handled = append(handled, add(t, rdb, s))
	}
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "the entries handled, one dead-lettered", func() bool {
		for _, id := range handled {
			if rec.count(id) != 1 {
				return false
			}
		}
		return c.Stats().Dead == 1 && pending(t, rdb, s) == 0
	})
	c.Close()
	return bad, handled
}

// TestReplayNoticedWithoutLiveRead: a rewind is noticed by a renderer
// that runs while it happens although ">" never gave it a position of
// the stream before (it started after the game's last entry: a deploy
// between a game's end and its replay, or a replica the dead-lettering
// peer's reads kept idle). Its newest position of the stream was unknown,
// so the replay's re-delivery looked live and the dead-lettered entry was
// handed to the handler again, which took it.
func TestReplayNoticedWithoutLiveRead(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("replayquiet")
	bad, handled := deadLetterOne(t, rdb, s, false)
	before := handled[0]

	// The renderer restarted (the same name) while the game is quiet,
	// then the game is replayed while it runs.
	var rec recorder
	cfg2 := baseConfig(t, rdb, "r1", s)
	cfg2.Handler = rec.handler // it would take the entry now
	c2 := mustOpen(t, cfg2)
	waitFor(t, 10*time.Second, "the restarted renderer waiting for new entries", func() bool { return readBlocked(ctx, rdb) })
	if err := rdb.Do(ctx, "XGROUP", "SETID", s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the replay settled", func() bool {
		return rec.count(before) == 1 && pending(t, rdb, s) == 0 && c2.Stats().DeadDuplicates+int64(rec.count(bad)) == 1
	})
	if n := rec.count(bad); n != 0 {
		t.Errorf("the dead-lettered entry was handed %d times after the replay; want none", n)
	}
	if st := c2.Stats(); st.DeadDuplicates != 1 {
		t.Errorf("duplicates %d; want 1", st.DeadDuplicates)
	}
}

// TestReplayNoticedAfterRestart: a rewind made while every renderer of
// the group was stopped (feedctl replay during a deploy) is noticed by a
// renderer started after it, through its store's position of the stream
// (Config.Position): the store committed lines up to a position the
// rewound group now hands out again with ">". Neither a ">" read nor the
// census (the group's cursor is back at 0) showed the process the rewind,
// so the dead-lettered entry was handed to the handler again, which took
// it.
func TestReplayNoticedAfterRestart(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("replaystopped")
	bad, handled := deadLetterOne(t, rdb, s, true)
	before, after := handled[0], handled[1]
	stored := lastID(t, rdb, s) // the store's position: its last line, after the letter

	// The game is replayed while no renderer runs, then one starts.
	if err := rdb.Do(ctx, "XGROUP", "SETID", s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	var rec recorder
	cfg2 := baseConfig(t, rdb, "r1", s)
	cfg2.Handler = rec.handler // it would take the entry now
	cfg2.Position = func(context.Context, string) (string, error) { return stored, nil }
	c2 := mustOpen(t, cfg2)
	waitFor(t, 10*time.Second, "the replay settled", func() bool {
		return settledAt(rdb, s, stored) && rec.count(before) == 1 && rec.count(after) == 1
	})
	if n := rec.count(bad); n != 0 {
		t.Errorf("the dead-lettered entry was handed %d times after the replay; want none", n)
	}
	if st := c2.Stats(); st.DeadDuplicates != 1 || st.Dead != 0 {
		t.Errorf("dead %d, duplicates %d; want no new letter and 1 duplicate", st.Dead, st.DeadDuplicates)
	}

	// Past the store's position the live path asks nothing again.
	liveAsksNothing(t, rdb, s, &rec)
}

// failZMScore is a go-redis hook that fails the next pipeline holding a
// ZMSCORE, once armed, with a connection error (as a node that stopped
// answering would), and lets every other command through.
type failZMScore struct{ armed atomic.Bool }

func (h *failZMScore) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *failZMScore) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *failZMScore) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if cmd.Name() == "zmscore" && h.armed.CompareAndSwap(true, false) {
				err := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
				for _, cmd := range cmds {
					cmd.SetErr(err)
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// TestRewoundLeftPendingLookedUp: a re-read batch (the group rewound)
// whose look at the dead positions fails, its node not answering, is left
// pending, and when the pending list gives them back (the own pending
// list, or a claim of its idle entries) their positions are looked up
// before the handler sees them: the dead-lettered entry is settled as a
// letter already written. Before, neither asked, and the entry was
// judged afresh and taken.
func TestRewoundLeftPendingLookedUp(t *testing.T) {
	ctx := context.Background()
	srv, rdb := mustStart(t)
	s := stream("rewoundpending")
	bad, handled := deadLetterOne(t, rdb, s, true)
	stored := lastID(t, rdb, s)
	if err := rdb.Do(ctx, "XGROUP", "SETID", s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}

	hook := &failZMScore{}
	hook.armed.Store(true)
	hooked := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	hooked.AddHook(hook)
	t.Cleanup(func() { hooked.Close() })
	var rec recorder
	cfg := baseConfig(t, hooked, "r1", s)
	cfg.Handler = rec.handler // it would take the entry now
	cfg.Position = func(context.Context, string) (string, error) { return stored, nil }
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "the replay settled", func() bool {
		return settledAt(rdb, s, stored) && rec.count(handled[0]) == 1 && rec.count(handled[1]) == 1
	})
	if hook.armed.Load() {
		t.Fatal("the look at the dead positions never failed; the test proves nothing")
	}
	if n := rec.count(bad); n != 0 {
		t.Errorf("the dead-lettered entry was handed %d times after the replay; want none", n)
	}
	if st := c.Stats(); st.DeadDuplicates != 1 || st.Dead != 0 || st.Recovered+st.Claimed == 0 {
		t.Errorf("dead %d, duplicates %d, recovered %d, claimed %d; want no new letter, 1 duplicate, the batch handled again from the pending list",
			st.Dead, st.DeadDuplicates, st.Recovered, st.Claimed)
	}
}

// lastID returns the position of the last entry of stream s.
func lastID(t *testing.T, rdb *redis.Client, s string) string {
	t.Helper()
	xs, err := rdb.XRevRangeN(context.Background(), s, "+", "-", 1).Result()
	if err != nil || len(xs) != 1 {
		t.Fatalf("last entry of %s: %v", s, err)
	}
	return xs[0].ID
}

// settledAt reports whether the group has delivered stream s up to last
// and has nothing pending there.
func settledAt(rdb *redis.Client, s, last string) bool {
	gs, err := rdb.XInfoGroups(context.Background(), s).Result()
	return err == nil && len(gs) == 1 && gs[0].LastDeliveredID == last && gs[0].Pending == 0
}

// liveAsksNothing writes three entries to s, waits until rec has them,
// and fails t if the consumer looked at the dead positions meanwhile.
func liveAsksNothing(t *testing.T, rdb *redis.Client, s string, rec *recorder) {
	t.Helper()
	asked := zmscores(t, rdb)
	live := []string{add(t, rdb, s), add(t, rdb, s), add(t, rdb, s)}
	waitFor(t, 10*time.Second, "three live entries handled", func() bool {
		return rec.count(live[0]) == 1 && rec.count(live[1]) == 1 && rec.count(live[2]) == 1
	})
	if now := zmscores(t, rdb); now != asked {
		t.Errorf("ZMSCORE %s before three live entries, %s after; want no look at the dead positions on the live path", asked, now)
	}
}

// zmscores returns the server's count of ZMSCORE calls (INFO
// commandstats), the look at the dead positions.
func zmscores(t *testing.T, rdb *redis.Client) string {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "cmdstat_zmscore:") {
			calls, _, _ := strings.Cut(strings.TrimPrefix(line, "cmdstat_zmscore:"), ",")
			return calls
		}
	}
	return "calls=0"
}
