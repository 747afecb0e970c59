package renderer_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/renderer"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// MustRunMain runs a renderer in-process with a ":0" address and a temp
// store, and closes it when the test ends.
func MustRunMain(tb testing.TB, redisURL, dbPath, consumer string, args ...string) *renderer.Main {
	tb.Helper()
	m := renderer.NewMain()
	base := []string{"-redis", redisURL, "-db", dbPath, "-http", "127.0.0.1:0", "-consumer", consumer,
		"-min-idle", "1s", "-claim-every", "200ms", "-games-refresh", "100ms"}
	if err := m.ParseFlags(append(base, args...)); err != nil {
		tb.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := m.Close(); err != nil {
			tb.Errorf("close renderer %s: %v", consumer, err)
		}
	})
	return m
}

var liID = regexp.MustCompile(`<li[^>]* id="(evt_[0-9A-Z]{26})"`)

// TestWriterToPage: events written by the simulator's code appear in SQLite
// exactly once each and in the server-rendered page in EVT-id order, with
// two replicas sharing the group and the file.
func TestWriterToPage(t *testing.T) {
	ctx := context.Background()
	rs := redistest.MustStart(t)
	db := filepath.Join(t.TempDir(), "feed.db")
	m1 := MustRunMain(t, rs.URL(), db, "r1")
	MustRunMain(t, rs.URL(), db, "r2")

	sum, err := gamesim.Run(ctx, rs.Client(t), gamesim.Config{Games: 2, Events: 120, Seed: 3, Prefix: "skel"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range sum.Games {
		var n int64
		proctest.WaitFor(t, 20*time.Second, func() bool {
			tl, err := m1.DB().Timeline(ctx, g.Game)
			n = int64(len(tl))
			return err == nil && n == g.Good
		}, "%s: %d lines stored (have %d)", g.Game, g.Good, n)

		tl, err := m1.DB().Timeline(ctx, g.Game)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for i, l := range tl {
			if seen[l.EvtID] {
				t.Fatalf("%s stored twice", l.EvtID)
			}
			seen[l.EvtID] = true
			if i > 0 && tl[i-1].EvtID >= l.EvtID {
				t.Fatalf("timeline not in EVT-id order at %d", i)
			}
		}
		if tl[0].EvtID != g.FirstID || tl[len(tl)-1].EvtID != g.LastID {
			t.Fatalf("timeline spans %s..%s; writer wrote %s..%s", tl[0].EvtID, tl[len(tl)-1].EvtID, g.FirstID, g.LastID)
		}

		resp, err := http.Get("http://" + m1.Addr() + "/games/" + g.Game)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET /games/%s: %d", g.Game, resp.StatusCode)
		}
		var page []string
		for _, m := range liID.FindAllStringSubmatch(string(body), -1) {
			page = append(page, m[1])
		}
		if len(page) == 0 {
			t.Fatalf("page shows no lines")
		}
		// Newest first: the page holds the latest lines, descending.
		for i, id := range page {
			if want := tl[len(tl)-1-i].EvtID; id != want {
				t.Fatalf("page line %d = %s, want %s", i, id, want)
			}
		}
	}
}

// TestSecondProcessWithSameNameRefused: a consumer name is held by one live
// process at a time.
func TestSecondProcessWithSameNameRefused(t *testing.T) {
	rs := redistest.MustStart(t)
	dir := t.TempDir()
	MustRunMain(t, rs.URL(), filepath.Join(dir, "a.db"), "same")
	m := renderer.NewMain()
	if err := m.ParseFlags([]string{"-redis", rs.URL(), "-db", filepath.Join(dir, "b.db"), "-http", "127.0.0.1:0", "-consumer", "same"}); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	m.Close()
	if err == nil {
		t.Fatal("second renderer with a held consumer name started")
	}
	t.Logf("refused: %v", err)
}

// TestPortTakenStopsBeforeConsuming: a renderer whose -http port is in use
// fails before it opens the store or reads a game, so it leaves no entry
// pending under its name and its name free. It used to migrate the store,
// take its name and start consuming, and only then fail to listen: the
// entries it had read waited MinIdle for a peer to claim them.
func TestPortTakenStopsBeforeConsuming(t *testing.T) {
	ctx := context.Background()
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	if _, err := gamesim.Run(ctx, rdb, gamesim.Config{Games: 1, Events: 20, Seed: 5, Prefix: "taken"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	db := filepath.Join(t.TempDir(), "feed.db")
	m := renderer.NewMain()
	if err := m.ParseFlags([]string{"-redis", rs.URL(), "-db", db, "-http", busy.Addr().String(), "-consumer", "r1"}); err != nil {
		t.Fatal(err)
	}
	err = m.Run(ctx)
	m.Close()
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("Run on a port in use: %v, want a listen error", err)
	}
	if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the store was opened (stat: %v) before the port was known to be free", err)
	}
	keys, err := rdb.Keys(ctx, "*:events").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("streams: %v %v", keys, err)
	}
	for _, k := range keys {
		groups, err := rdb.XInfoGroups(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			if g.Pending != 0 || g.EntriesRead > 0 {
				t.Errorf("%s: group %s read %d entries, %d pending, from a renderer that could not serve", k, g.Name, g.EntriesRead, g.Pending)
			}
		}
	}
	// Its name is free: a renderer on a free port starts at once.
	MustRunMain(t, rs.URL(), db, "r1")
}

func TestParseFlagsEnvFallback(t *testing.T) {
	t.Setenv("FEED_MIN_IDLE", "7s")
	t.Setenv("REDIS_URL", "redis://example:1/2")
	m := renderer.NewMain()
	if err := m.ParseFlags([]string{"-consumer", "x"}); err != nil {
		t.Fatal(err)
	}
	if m.Config.MinIdle != 7*time.Second || m.Config.RedisURL != "redis://example:1/2" {
		t.Fatalf("env fallback not applied: %+v", m.Config)
	}
	if err := m.ParseFlags([]string{"-min-idle", "2s"}); err != nil || m.Config.MinIdle != 2*time.Second {
		t.Fatalf("flag does not beat env: %v %+v", err, m.Config)
	}
	t.Setenv("FEED_POISON_AFTER", "many")
	if err := renderer.NewMain().ParseFlags(nil); err == nil {
		t.Fatal("bad $FEED_POISON_AFTER accepted")
	}
}
