package gamesim_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/redistest"
)

// waitFor polls cond until it holds or timeout passes.
func waitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// malformedReason applies the design's rules for malformed entries (not the
// simulator's own bookkeeping) and returns why an entry is malformed, or "".
func malformedReason(values map[string]any) string {
	fields := map[string]string{}
	size := 0
	for k, v := range values {
		s := v.(string)
		fields[k] = s
		size += len(k) + len(s)
		if !utf8.ValidString(k) || !utf8.ValidString(s) {
			return gamesim.BadInvalidUTF8
		}
	}
	id, ok := fields[event.FieldID]
	switch {
	case size > event.MaxEntryBytes:
		return gamesim.BadOversize
	case !ok:
		return gamesim.BadMissingID
	case !event.ValidID(id):
		return gamesim.BadInvalidID
	}
	kind, ok := fields[event.FieldKind]
	if !ok {
		return gamesim.BadMissingKind
	}
	delete(fields, event.FieldID)
	if err := event.Validate(kind, fields); err != nil {
		if strings.Contains(err.Error(), "missing field") {
			return gamesim.BadMissingField
		}
		return gamesim.BadInvalidField
	}
	return ""
}

func xrange(tb testing.TB, rdb *redis.Client, key string) []redis.XMessage {
	tb.Helper()
	msgs, err := rdb.XRange(context.Background(), key, "-", "+").Result()
	if err != nil {
		tb.Fatal(err)
	}
	return msgs
}

// checkStreams asserts that the streams hold exactly what sum says: the
// counts, which entries are malformed and why, monotone EVT ids, the good
// entries in the order Play makes them, and the registry's scores.
func checkStreams(t *testing.T, rdb *redis.Client, cfg gamesim.Config, sum gamesim.Summary) {
	t.Helper()
	ctx := context.Background()
	if len(sum.Games) != cfg.Games {
		t.Fatalf("summary has %d games, want %d", len(sum.Games), cfg.Games)
	}
	var total int64
	for i, g := range sum.Games {
		if want := gamesim.GameName(cfg.Prefix, i+1); g.Game != want || g.Stream != event.StreamKey(want) {
			t.Fatalf("game %d is %q on %q, want %q", i+1, g.Game, g.Stream, want)
		}
		msgs := xrange(t, rdb, g.Stream)
		if int64(len(msgs)) != g.Written() {
			t.Fatalf("%s: stream holds %d entries, summary says %d written", g.Game, len(msgs), g.Written())
		}
		bad := map[string]bool{}
		for _, p := range g.BadPositions {
			bad[p] = true
		}
		if int64(len(bad)) != g.Bad {
			t.Fatalf("%s: %d bad positions for %d bad entries", g.Game, len(bad), g.Bad)
		}
		reasons := map[string]int64{}
		var good []gamesim.Event
		var unknown int64
		lastID := ""
		for _, m := range msgs {
			reason := malformedReason(m.Values)
			if bad[m.ID] != (reason != "") {
				t.Fatalf("%s %s: simulator says bad=%v, rules say %q: %v", g.Game, m.ID, bad[m.ID], reason, m.Values)
			}
			if reason != "" {
				reasons[reason]++
			}
			if id, _ := m.Values[event.FieldID].(string); event.ValidID(id) {
				if id <= lastID {
					t.Fatalf("%s %s: EVT id %s not above %s", g.Game, m.ID, id, lastID)
				}
				lastID = id
			}
			at, err := time.Parse(time.RFC3339, fmt.Sprint(m.Values[event.FieldAt]))
			if reason == "" && (err != nil || len(fmt.Sprint(m.Values[event.FieldAt])) != len("2006-01-02T15:04:05.000Z")) {
				t.Fatalf("%s %s: at %v: want RFC 3339 UTC with milliseconds (%v)", g.Game, m.ID, m.Values[event.FieldAt], err)
			}
			if id, _ := m.Values[event.FieldID].(string); reason == "" && at.UnixMilli() > mustIDTime(t, id).UnixMilli() {
				t.Fatalf("%s %s: at %v after the id's time", g.Game, m.ID, at)
			}
			switch kind := m.Values[event.FieldKind]; {
			case reason != "":
			case kind == gamesim.UnknownKind:
				unknown++
			default:
				good = append(good, fromValues(m.Values))
			}
		}
		for _, r := range gamesim.BadReasons {
			if reasons[r] != g.Reasons[r] {
				t.Fatalf("%s: %d entries malformed by %s, summary says %d", g.Game, reasons[r], r, g.Reasons[r])
			}
		}
		if unknown != g.Unknown || g.Good-g.Unknown != int64(len(good)) {
			t.Fatalf("%s: %d unknown and %d known good, summary says %d of %d", g.Game, unknown, len(good), g.Unknown, g.Good)
		}
		if want := gamesim.Play(g.Game, gamesim.GameSeed(cfg.Seed, i+1), len(good)); !equalEvents(good, want) {
			t.Fatalf("%s: good entries are not the game Play makes", g.Game)
		}
		if lastID != g.LastID {
			t.Fatalf("%s: last EVT id %s, summary says %s", g.Game, lastID, g.LastID)
		}
		score, err := rdb.ZScore(ctx, event.RegistryKey, g.Game).Result()
		if err != nil || int64(score) != g.LastAt.UnixMilli() {
			t.Fatalf("%s: registry score %v (%v), want %d", g.Game, score, err, g.LastAt.UnixMilli())
		}
		if last := msgs[len(msgs)-1]; last.ID != g.LastPos || fmt.Sprint(last.Values[event.FieldAt]) != gamesim.FormatAt(g.LastAt) {
			t.Fatalf("%s: last entry %s at %v, summary says %s at %v", g.Game, last.ID, last.Values[event.FieldAt], g.LastPos, g.LastAt)
		}
		total += g.Written()
	}
	if total != sum.Written() || sum.Good+sum.Bad != total {
		t.Fatalf("totals: %d in streams, summary %d good + %d bad", total, sum.Good, sum.Bad)
	}
}

func mustIDTime(t *testing.T, id string) time.Time {
	t.Helper()
	ts, ok := event.IDTime(id)
	if !ok {
		t.Fatalf("bad EVT id %q", id)
	}
	return ts
}

// fromValues rebuilds an Event from a stream entry, in Play's field order.
func fromValues(v map[string]any) gamesim.Event {
	e := gamesim.Event{Kind: fmt.Sprint(v[event.FieldKind])}
	for k, val := range v {
		if k != event.FieldID && k != event.FieldKind && k != event.FieldAt {
			e.Fields = append(e.Fields, gamesim.Field{Name: k, Value: val.(string)})
		}
	}
	return e
}

// equalEvents compares kinds and fields, ignoring field order.
func equalEvents(a, b []gamesim.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind != b[i].Kind || len(a[i].Fields) != len(b[i].Fields) {
			return false
		}
		for _, f := range b[i].Fields {
			if a[i].Get(f.Name) != f.Value {
				return false
			}
		}
	}
	return true
}

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

// TestRunSurvivesRedisRestart kills Redis (AOF on) while the writer is
// busy: the writer retries and, thanks to its own positions, writes every
// entry exactly once.
func TestRunSurvivesRedisRestart(t *testing.T) {
	t.Parallel()
	s := redistest.MustStart(t, redistest.Options{AOF: true})
	rdb := s.Client(t)
	cfg := gamesim.Config{Games: 2, Events: 3000, Rate: 3000, Seed: 10, Bad: 0.01}
	type result struct {
		sum gamesim.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := gamesim.Run(context.Background(), rdb, cfg, io.Discard)
		done <- result{sum, err}
	}()
	waitFor(t, 20*time.Second, "600 entries in game-1", func() bool {
		n, _ := rdb.XLen(context.Background(), event.StreamKey("game-1")).Result()
		return n >= 600
	})
	s.Restart(t)
	var res result
	select {
	case res = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not finish after the restart")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if got := res.sum.Written(); got != 6000 {
		t.Fatalf("%d written, want 6000", got)
	}
	checkStreams(t, rdb, cfg, res.sum)
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

// cutProxy forwards TCP to Redis and, when armed, drops the connection the
// moment a reply arrives: Redis applied the commands, the writer never hears
// so. That is the case the writer's own stream positions exist for.
type cutProxy struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	cuts   atomic.Int32
}

func startCutProxy(tb testing.TB, target string) *cutProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, server)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(server, client); server.Close() }()
			go func() {
				defer wg.Done()
				defer client.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := server.Read(buf)
					if n > 0 && p.armed.CompareAndSwap(true, false) {
						p.cuts.Add(1)
						server.Close()
						return
					}
					if n > 0 {
						if _, werr := client.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// TestRunWritesOnceWhenRepliesAreLost cuts connections after Redis applied
// a batch but before the writer heard back, three times: every entry must
// still be in its stream exactly once.
func TestRunWritesOnceWhenRepliesAreLost(t *testing.T) {
	t.Parallel()
	s := redistest.MustStart(t)
	direct := s.Client(t)
	proxy := startCutProxy(t, s.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.ln.Addr().String()})
	t.Cleanup(func() { rdb.Close() })
	cfg := gamesim.Config{Games: 2, Events: 3000, Rate: 3000, Seed: 12, Bad: 0.01}
	type result struct {
		sum gamesim.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := gamesim.Run(context.Background(), rdb, cfg, io.Discard)
		done <- result{sum, err}
	}()
	for i := range 3 {
		at := int64(300 * (i + 1))
		waitFor(t, 20*time.Second, fmt.Sprintf("%d entries", at), func() bool {
			n, _ := direct.XLen(context.Background(), event.StreamKey("game-1")).Result()
			return n >= at
		})
		proxy.armed.Store(true)
		waitFor(t, 20*time.Second, "a cut", func() bool { return !proxy.armed.Load() })
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not finish")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if proxy.cuts.Load() != 3 || res.sum.Written() != 6000 {
		t.Fatalf("%d cuts, %d written; want 3, 6000", proxy.cuts.Load(), res.sum.Written())
	}
	checkStreams(t, direct, cfg, res.sum)
}

// syncBuffer is a progress writer the test can read while Run writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunSurvivesRedisPause freezes Redis (SIGSTOP) while batches are in
// flight: the writer times out and retries on new connections while the
// old ones still hold the same commands, which the server runs all at once
// when it resumes. Every entry must be in its stream exactly once.
func TestRunSurvivesRedisPause(t *testing.T) {
	t.Parallel()
	s := redistest.MustStart(t)
	direct := s.Client(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	cfg := gamesim.Config{Games: 2, Events: 3000, Rate: 3000, Seed: 13, Bad: 0.01}
	var progress syncBuffer
	type result struct {
		sum gamesim.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := gamesim.Run(context.Background(), rdb, cfg, &progress)
		done <- result{sum, err}
	}()
	waitFor(t, 20*time.Second, "600 entries in game-1", func() bool {
		n, _ := direct.XLen(context.Background(), event.StreamKey("game-1")).Result()
		return n >= 600
	})
	s.Pause(t)
	waitFor(t, 20*time.Second, "three retries", func() bool {
		return strings.Count(progress.String(), "retrying") >= 3
	})
	s.Resume(t)
	var res result
	select {
	case res = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not finish after the pause")
	}
	if res.err != nil || res.sum.Written() != 6000 {
		t.Fatalf("%d written, %v; want 6000, nil", res.sum.Written(), res.err)
	}
	checkStreams(t, direct, cfg, res.sum)
}
