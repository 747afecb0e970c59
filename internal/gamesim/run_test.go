package gamesim_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

func TestRunWritesExactlyWhatItSays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  gamesim.Config
	}{
		{"clean", gamesim.Config{Games: 3, Events: 400, Seed: 1}},
		{"bad", gamesim.Config{Games: 3, Events: 2000, Seed: 2, Bad: 0.1, Prefix: "bad"}},
		{"unknown", gamesim.Config{Games: 2, Events: 500, Seed: 3, Bad: 0.05, Unknown: 0.05, Prefix: "mix"}},
		{"paced", gamesim.Config{Games: 2, Events: 30, Seed: 4, Rate: 400, Prefix: "paced"}},
		{"one", gamesim.Config{Games: 1, Events: 1, Seed: 5, Prefix: "x"}},
	}
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum, err := gamesim.Run(context.Background(), rdb, tt.cfg, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Stopped {
				t.Fatal("Stopped without a cancel")
			}
			for _, g := range sum.Games {
				if g.Written() != int64(tt.cfg.Events) {
					t.Fatalf("%s: %d written, want %d", g.Game, g.Written(), tt.cfg.Events)
				}
			}
			checkStreams(t, rdb, tt.cfg, sum)
			if tt.cfg.Bad > 0 {
				want := tt.cfg.Bad * float64(sum.Written())
				if got := float64(sum.Bad); math.Abs(got-want) > 0.25*want {
					t.Fatalf("%v malformed entries, want about %v", got, want)
				}
				for _, r := range gamesim.BadReasons {
					if n := sumReasons(sum, r); n == 0 && sum.Bad >= 100 {
						t.Fatalf("no entry malformed by %s among %d", r, sum.Bad)
					}
				}
			}
			if tt.cfg.Unknown > 0 && sum.Unknown == 0 {
				t.Fatal("no entry of an unknown kind")
			}
		})
	}
}

func sumReasons(s gamesim.Summary, reason string) int64 {
	var n int64
	for _, g := range s.Games {
		n += g.Reasons[reason]
	}
	return n
}

func TestRunHonoursRate(t *testing.T) {
	t.Parallel()
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	cfg := gamesim.Config{Games: 2, Events: 20, Rate: 100, Seed: 7}
	start := time.Now()
	sum, err := gamesim.Run(context.Background(), rdb, cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// Pacing can only make it slower, never faster: entry n is not written
	// before start + n/rate. That is a bound that cannot flake.
	if min := 39 * time.Second / 100; time.Since(start) < min || sum.Elapsed < min {
		t.Fatalf("40 entries at 100/s took %v, want at least %v", time.Since(start), min)
	}
	var first, last time.Time
	for _, g := range sum.Games {
		for _, m := range xrange(t, rdb, g.Stream) {
			at, _ := time.Parse(time.RFC3339, fmt.Sprint(m.Values[event.FieldAt]))
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		}
	}
	if spread := last.Sub(first); spread < 380*time.Millisecond {
		t.Fatalf("entries written over %v, want at least 380ms at 100/s", spread)
	}
	checkStreams(t, rdb, cfg, sum)
}

func TestRunEndlessStopsOnCancel(t *testing.T) {
	t.Parallel()
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := gamesim.Config{Games: 3, Events: 0, Seed: 8, Bad: 0.02}
	type result struct {
		sum gamesim.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := gamesim.Run(ctx, rdb, cfg, io.Discard)
		done <- result{sum, err}
	}()
	key := event.StreamKey(gamesim.GameName("", 3))
	waitFor(t, 20*time.Second, "2000 entries in game-3", func() bool {
		n, _ := rdb.XLen(context.Background(), key).Result()
		return n >= 2000
	})
	cancel()
	var res result
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if res.err != nil || !res.sum.Stopped {
		t.Fatalf("Run = stopped %v, %v; want stopped, nil", res.sum.Stopped, res.err)
	}
	if res.sum.Games[2].Written() < 2000 {
		t.Fatalf("game-3: %d written, stream had at least 2000", res.sum.Games[2].Written())
	}
	checkStreams(t, rdb, cfg, res.sum)
}

func TestRunTrimsToMaxLen(t *testing.T) {
	t.Parallel()
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	cfg := gamesim.Config{Games: 1, Events: 5000, Seed: 9, MaxLen: 200}
	sum, err := gamesim.Run(context.Background(), rdb, cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	n, err := rdb.XLen(context.Background(), sum.Games[0].Stream).Result()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Written() != 5000 || n < 200 || n >= 1000 {
		t.Fatalf("wrote %d with maxlen 200, stream holds %d; want 200 <= len < 1000", sum.Written(), n)
	}
}

// TestRunResumesAfterExistingEntries writes after a stream whose last
// position is ahead of the clock: the writer must go after it, never stop
// or mistake the old entries for its own.
func TestRunResumesAfterExistingEntries(t *testing.T) {
	t.Parallel()
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	ahead := fmt.Sprintf("%d-5", time.Now().Add(time.Hour).UnixMilli())
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: event.StreamKey("old-1"), ID: ahead, Values: []string{"k", "v"}}).Err(); err != nil {
		t.Fatal(err)
	}
	cfg := gamesim.Config{Games: 1, Events: 300, Seed: 11, Prefix: "old"}
	sum, err := gamesim.Run(ctx, rdb, cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	msgs := xrange(t, rdb, event.StreamKey("old-1"))
	if len(msgs) != 301 || msgs[0].ID != ahead || sum.Written() != 300 {
		t.Fatalf("stream holds %d entries starting at %s, summary %d; want the old one then 300", len(msgs), msgs[0].ID, sum.Written())
	}
	// A second run appends after the first.
	sum2, err := gamesim.Run(ctx, rdb, cfg, io.Discard)
	if err != nil || sum2.Written() != 300 {
		t.Fatalf("second run: %d written, %v", sum2.Written(), err)
	}
	if n, _ := rdb.XLen(ctx, event.StreamKey("old-1")).Result(); n != 601 {
		t.Fatalf("after two runs the stream holds %d, want 601", n)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []gamesim.Config{
		{Games: 0, Events: 1},
		{Games: 1, Events: -1},
		{Games: 1, Rate: -1},
		{Games: 1, MaxLen: -5},
		{Games: 1, Bad: 1.5},
		{Games: 1, Bad: 0.6, Unknown: 0.6},
		{Games: 1, Prefix: "Bad_Prefix"},
		{Games: 1, Prefix: strings.Repeat("a", 63)},
		// Not numbers, as -rate NaN or GAMESIM_BAD=nan parse: they were
		// taken for 0 (unpaced, no malformed entries) without a word.
		{Games: 1, Events: 1, Rate: math.NaN()},
		{Games: 1, Events: 1, Rate: math.Inf(1)},
		{Games: 1, Events: 1, Bad: math.NaN()},
		{Games: 1, Events: 1, Unknown: math.NaN()},
	}
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	for _, cfg := range tests {
		if _, err := gamesim.Run(context.Background(), rdb, cfg, io.Discard); !errors.Is(err, gamesim.ErrConfig) {
			t.Errorf("Run(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
	if n, _ := rdb.DBSize(context.Background()).Result(); n != 0 {
		t.Fatalf("a rejected config wrote %d keys", n)
	}
}

func TestAppend(t *testing.T) {
	t.Parallel()
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	evs := gamesim.Play("live-1", 1, 25)
	ids, err := gamesim.Append(ctx, rdb, event.NewMinter(1), "live-1", evs...)
	if err != nil {
		t.Fatal(err)
	}
	msgs := xrange(t, rdb, event.StreamKey("live-1"))
	if len(msgs) != len(evs) || len(ids) != len(evs) {
		t.Fatalf("%d entries, %d ids; want %d", len(msgs), len(ids), len(evs))
	}
	for i, m := range msgs {
		if m.Values[event.FieldID] != ids[i] || malformedReason(m.Values) != "" || !equalEvents([]gamesim.Event{fromValues(m.Values)}, evs[i:i+1]) {
			t.Fatalf("entry %d = %v, want %s %v", i, m.Values, ids[i], evs[i])
		}
		if i > 0 && ids[i] <= ids[i-1] {
			t.Fatalf("ids not increasing: %s then %s", ids[i-1], ids[i])
		}
	}
	if _, err := rdb.ZScore(ctx, event.RegistryKey, "live-1").Result(); err != nil {
		t.Fatalf("live-1 not registered: %v", err)
	}
	if _, err := gamesim.Append(ctx, rdb, event.NewMinter(1), "Not Valid", evs...); !errors.Is(err, gamesim.ErrConfig) {
		t.Fatalf("Append to an invalid game = %v, want ErrConfig", err)
	}
}

// TestRestartAfterClockStepKeepsIDsIncreasing: a writer whose clock was
// ahead (two minutes: within the renderers' future bound, so its entries
// were stored) wrote a game's entries, then NTP stepped its clock back and
// the writer was restarted. Its positions resume after the stream's top;
// its EVT ids must too: docs/contracts.md promises strictly increasing ids,
// the dedup key and the timeline's order, and newer-wins state follows
// them, so a new run's game_started minted below the old run's game_over
// would leave the game "over" while it plays.
func TestRestartAfterClockStepKeepsIDsIncreasing(t *testing.T) {
	t.Parallel()
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	stream := event.StreamKey("step-1")
	ahead := time.Now().Add(2 * time.Minute)
	m := event.NewMinter(99)
	var oldLast string
	for i, e := range gamesim.Play("step-1", 5, 10) {
		oldLast = m.Next(ahead)
		pos := fmt.Sprintf("%d-%d", ahead.UnixMilli(), i)
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, ID: pos, Values: e.Entry(oldLast, ahead)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cfg := gamesim.Config{Games: 1, Events: 50, Seed: 5, Prefix: "step"}
	if _, err := gamesim.Run(ctx, rdb, cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	prev := ""
	for _, x := range xrange(t, rdb, stream) {
		id, _ := x.Values[event.FieldID].(string)
		if id <= prev {
			t.Fatalf("entry %s: EVT id %s not above %s, the last id before it (the old run's last: %s)", x.ID, id, prev, oldLast)
		}
		prev = id
	}
}

// TestRestartNotDraggedByForgedID: the writer resumes after its streams'
// last EVT ids, but not after one minted far ahead (forged, or a broken
// clock's, dead-lettered by the renderers as a future id): followed, it
// would make every id the writer mints a future id too.
func TestRestartNotDraggedByForgedID(t *testing.T) {
	t.Parallel()
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	stream := event.StreamKey("forged-1")
	for _, id := range []string{"evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ", event.NewMinter(1).Next(time.Now().Add(time.Hour))} {
		e := gamesim.Play("forged-1", 1, 1)[0]
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: e.Entry(id, time.Now())}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	sum, err := gamesim.Run(ctx, rdb, gamesim.Config{Games: 1, Events: 20, Seed: 1, Prefix: "forged"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if at := mustIDTime(t, sum.Games[0].LastID); at.After(time.Now()) || at.Before(start.Truncate(time.Millisecond)) {
		t.Fatalf("last id %s minted at %v, want the writer's clock (%v)", sum.Games[0].LastID, at, start)
	}
}
