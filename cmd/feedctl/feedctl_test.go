package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/store"
)

func runCtl(t *testing.T, addr string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(context.Background(), append([]string{"-redis", "redis://" + addr}, args...), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

// TestRebuildSkipsConflict: a game whose stream holds one EVT id twice with
// different payloads (a producer fault the renderer dead-letters as
// "conflict", keeping the first line) must still rebuild: the renderers
// build a store with its lines.
func TestRebuildSkipsConflict(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	evs := gamesim.Play("g1", 1, 6)
	m := event.NewMinter(1)
	ids, err := gamesim.Append(ctx, rdb, m, "g1", evs...)
	if err != nil {
		t.Fatal(err)
	}
	// ids[2] again, with another event's payload.
	if err := gamesim.AppendItems(ctx, rdb, time.Now(), gamesim.Item{Game: "g1", ID: ids[2], Event: evs[4]}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "new.db")
	out, errOut, err := runCtl(t, s.Addr, "rebuild", "-db", path)
	if err != nil {
		t.Fatalf("rebuild: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lines, err := db.Timeline(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(evs) {
		t.Fatalf("%d lines, want %d", len(lines), len(evs))
	}
}

// TestStoreLinesAreSlog: the lines a store logs when feedctl opens it for
// writing (the migrations of a new file for rebuild, of an older one for
// prune; a copied file's positions moved back) come on the command's
// stderr as slog text, the renderer's format, with the store's db key.
// They went to slog's default logger: the log package's format, on the
// process's stderr, not the command's.
func TestStoreLinesAreSlog(t *testing.T) {
	s := redistest.MustStart(t)
	for _, tt := range []struct {
		name string
		args func(path string) []string
		old  bool // the file is a store at schema 3, which the command migrates
	}{
		{"rebuild", func(path string) []string { return []string{"rebuild", "-db", path} }, false},
		{"prune", func(path string) []string { return []string{"prune", "-older-than", "24h", "-db", path, "-yes"} }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "feed.db")
			if tt.old {
				schema3Store(t, path, "old-1", twoDaysAgo())
			}
			out, errOut, err := runCtl(t, s.Addr, tt.args(path)...)
			if err != nil {
				t.Fatalf("%v\n%s%s", err, out, errOut)
			}
			logged := false
			for _, line := range strings.Split(errOut, "\n") {
				if strings.Contains(line, `msg="store migration applied"`) {
					logged = true
					if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " level=INFO ") || !strings.Contains(line, " db=") {
						t.Errorf("not slog text with the store's db: %s", line)
					}
				}
			}
			if !logged {
				t.Errorf("no store migration logged on the command's stderr:\n%s", errOut)
			}
		})
	}
}

// TestRequeueRefusesTruncated: a truncated dead letter cannot be requeued
// (the script refuses it): the dry run must not promise it, and -all must
// not stop at it.
func TestRequeueRefusesTruncated(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	ev := gamesim.Play("g1", 1, 1)[0]
	m := event.NewMinter(1)
	vals := ev.Entry(m.Next(time.Now()), time.Now())
	args := []any{}
	for _, v := range vals {
		args = append(args, v)
	}
	trunc := append(append([]any{}, args...), "dead_reason", "poison: x", "dead_truncated", "text 9000 bytes sha256 00\n")
	dk := event.DeadKey("g1")
	tid, err := rdb.XAdd(ctx, (&redisXAdd{dk, trunc}).args()).Result()
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runCtl(t, s.Addr, "dead", "requeue", "-game", "g1", "-all", "-dry-run")
	if strings.Contains(out, "would requeue "+tid) || err == nil {
		t.Fatalf("dry run promises to requeue truncated letter %s (err %v):\n%s", tid, err, out)
	}
}

type redisXAdd struct {
	key  string
	vals []any
}

func (r *redisXAdd) args() *redis.XAddArgs { return &redis.XAddArgs{Stream: r.key, Values: r.vals} }

// TestRebuildHonoursFutureBound: a renderer run with FEED_FUTURE_BOUND=1h
// stores an entry whose EVT id is 30 minutes ahead of its position; a
// rebuild in the same environment must too, or the rebuilt store lacks
// lines the live one has.
func TestRebuildHonoursFutureBound(t *testing.T) {
	t.Setenv("FEED_FUTURE_BOUND", "1h")
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	ev := gamesim.Play("g1", 1, 1)[0]
	id := event.NewMinter(1).Next(time.Now().Add(30 * time.Minute))
	if err := gamesim.AppendItems(ctx, rdb, time.Now(), gamesim.Item{Game: "g1", ID: id, Event: ev}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "new.db")
	if out, errOut, err := runCtl(t, s.Addr, "rebuild", "-db", path); err != nil {
		t.Fatalf("rebuild: %v\n%s%s", err, out, errOut)
	}
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lines, err := db.Timeline(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1 (the renderer's -future-bound 1h keeps it)", len(lines))
	}
}

// TestGlobalFlagsRefuseUnusableValues: feedctl refuses a -group the
// renderers refuse (empty, with { or }, whitespace or control characters,
// over 255 bytes: it took all but the empty one until 6 Dec 2026), a
// -future-bound under the renderers' floor (1s) and a -timeout under its
// own (100ms, 0 aside), flag or environment, as the renderers refuse them,
// before it does anything. It took them: a negative bound turns the
// pipeline's check off, so rebuild stored an entry minted an hour ahead of
// its position, which every renderer dead-letters as a future id (and
// requeue's check let such entries through), and 0 meant the default 10m
// whatever the renderers ran with.
func TestGlobalFlagsRefuseUnusableValues(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	ev := gamesim.Play("g1", 1, 1)[0]
	id := event.NewMinter(1).Next(time.Now().Add(time.Hour))
	if err := gamesim.AppendItems(ctx, rdb, time.Now(), gamesim.Item{Game: "g1", ID: id, Event: ev}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"-future-bound", "-1m"}, "", "-future-bound -1m0s"},
		{[]string{"-future-bound", "0"}, "", "-future-bound 0s"},
		{nil, "-1m", "-future-bound -1m0s"},
		{[]string{"-group", ""}, "", `-group "": empty; want 1 to 255 bytes`},
		// Group names the renderers refuse (event.CheckGroup): a { or }
		// moved the hash tag {GROUP} of the lease keys, and feedctl
		// looked for the group's renderers under keys none of them has.
		{[]string{"-group", "a{b"}, "", `-group "a{b": has '{'`},
		{[]string{"-group", "}"}, "", `-group "}": has '}'`},
		{[]string{"-group", "host a"}, "", `-group "host a": has ' '`},
		{[]string{"-group", "a\nb"}, "", `-group "a\nb": has '\n'`},
		// Under the renderers' floor (pipeline.MaxAheadFloor), which
		// they refuse: taken, it dead-lettered honest entries of a
		// writer whose clock is a little ahead of Redis's.
		{[]string{"-future-bound", "999ms"}, "", "-future-bound 999ms: want at least 1s"},
		{nil, "1ns", "-future-bound 1ns: want at least 1s"},
		// Under TimeoutFloor: every call failed at once.
		{[]string{"-timeout", "1ns"}, "", "-timeout 1ns: want at least 100ms"},
	} {
		t.Setenv("FEED_FUTURE_BOUND", tt.env)
		path := filepath.Join(t.TempDir(), "new.db")
		out, errOut, err := runCtl(t, s.Addr, append(tt.args, "rebuild", "-db", path)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q, $FEED_FUTURE_BOUND %q: rebuild: %v, want an error saying %q\n%s%s", tt.args, tt.env, err, tt.want, out, errOut)
		}
		if _, serr := os.Stat(path); serr == nil {
			t.Errorf("%q, $FEED_FUTURE_BOUND %q: rebuild wrote %s", tt.args, tt.env, path)
		}
	}
}

// TestHungRedisTimeout: against a Redis that accepts connections but
// answers nothing (SIGSTOPped), a command fails once -timeout has run out
// for its first call, saying so, where go-redis's own read timeouts and
// retries kept feedctl status waiting about 42 s. The first call is the
// cluster probe of the plain URL (redisconn.OpenContext): -timeout's
// deadline ends it, and the command with it, where the probe took its own
// 2 s whatever -timeout said, fell back to a single-node client, and the
// command's first call then waited out -timeout. A Redis that answers
// within the bound is unaffected.
func TestHungRedisTimeout(t *testing.T) {
	s := redistest.MustStart(t)
	// No renderer alive is said so, where the line ended "renderers
	// alive: " with nothing after it.
	if out := mustRunCtl(t, s.Addr, "-timeout", "1s", "status"); !strings.Contains(out, "games: 0 of 0") ||
		!strings.Contains(out, "renderers alive: none\n") {
		t.Fatalf("status of an empty Redis with -timeout 1s:\n%s", out)
	}
	s.Pause(t)
	defer s.Resume(t)
	for _, args := range [][]string{{"-timeout", "1s", "status"}, {"-timeout", "1s", "ping"}, {"-timeout", "1s", "dead", "list", "-game", "g1"}} {
		done := make(chan error, 1)
		go func() {
			_, _, err := runCtl(t, s.Addr, args...)
			done <- err
		}()
		// go-redis's own bound is about 42 s here: well past this one.
		select {
		case err := <-done:
			// Ended by -timeout's deadline, and at the probe: a probe
			// that runs out of its own 2 s is no error.
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "redis did not answer within -timeout 1s: redisconn: cluster probe of "+s.Addr) {
				t.Errorf("%v against a hung Redis: %v; want the probe ended by -timeout's deadline, named", args, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%v against a hung Redis still waiting after 20 s with -timeout 1s", args)
		}
	}
	if _, _, err := runCtl(t, s.Addr, "-timeout", "-1s", "ping"); err == nil || !strings.Contains(err.Error(), "-timeout -1s") {
		t.Errorf("-timeout -1s: %v; want it refused", err)
	}
}

// TestStatusOnCluster: on a Redis Cluster, feedctl's client (a cluster
// client, with the -timeout hook on it) reports every game.
func TestStatusOnCluster(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	rdb := rc.Client(t)
	m := event.NewMinter(1)
	for _, game := range []string{"g1", "g2", "g3"} {
		if _, err := gamesim.Append(context.Background(), rdb, m, game, gamesim.Play(game, 1, 3)...); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if err := Run(context.Background(), []string{"-redis", rc.URL(), "-timeout", "5s", "status"}, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatalf("status on a cluster: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "games: 3 of 3") {
		t.Fatalf("status on a cluster:\n%s", out.String())
	}
	for _, game := range []string{"g1", "g2", "g3"} {
		if !strings.Contains(out.String(), game+" ") {
			t.Errorf("status on a cluster does not list %s:\n%s", game, out.String())
		}
	}
}

// TestPingTakesNoArgument: ping read none of its arguments, so "ping
// -redis URL" (the global flag put after the command) pinged the Redis of
// the global flags and exited 0, whatever the URL named, and "ping stray"
// passed too. Both are refused, before Redis is asked.
func TestPingTakesNoArgument(t *testing.T) {
	s := redistest.MustStart(t)
	for _, args := range [][]string{
		{"ping", "-redis", "redis://127.0.0.1:1/0"},
		{"ping", "stray"},
	} {
		out, errOut, err := runCtl(t, s.Addr, args...)
		if err == nil {
			t.Errorf("%q: exit 0, want it refused\n%s%s", args, out, errOut)
		}
	}
	mustRunCtl(t, s.Addr, "ping")
}
