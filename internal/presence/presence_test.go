package presence_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/presence"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

func mustNew(tb testing.TB, cfg presence.Config) *presence.Redis {
	tb.Helper()
	p, err := presence.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func mustSync(tb testing.TB, p *presence.Redis, local map[string]int) map[string]int {
	tb.Helper()
	got, err := p.Sync(context.Background(), local)
	if err != nil {
		tb.Fatalf("sync: %v", err)
	}
	return got
}

// Two replicas see each other's counts; one that stops refreshing (a
// crash) drops out within its TTL, and then no key is left at all.
func TestSyncCountsOthersAndExpires(t *testing.T) {
	srv := redistest.MustStart(t)
	rdb := srv.Client(t)
	// Long enough that the counting checks below, each a sync or two
	// apart, cannot see a count expire on a loaded host.
	const ttl = 3 * time.Second
	a := mustNew(t, presence.Config{Client: rdb, Replica: presence.ReplicaID("a"), TTL: ttl})
	b := mustNew(t, presence.Config{Client: rdb, Replica: presence.ReplicaID("b"), TTL: ttl})

	mustSync(t, a, map[string]int{"g1": 2})
	if got, want := mustSync(t, b, map[string]int{"g1": 1, "g2": 3, "g3": 0}), map[string]int{"g1": 2}; !maps.Equal(got, want) {
		t.Fatalf("b sees %v, want %v", got, want)
	}
	if got, want := mustSync(t, a, map[string]int{"g1": 2}), map[string]int{"g1": 1, "g2": 3}; !maps.Equal(got, want) {
		t.Fatalf("a sees %v, want %v", got, want)
	}
	// b's viewers of g2 leave: the next beat drops the field.
	mustSync(t, b, map[string]int{"g1": 1})
	if got, want := mustSync(t, a, map[string]int{"g1": 2}), map[string]int{"g1": 1}; !maps.Equal(got, want) {
		t.Fatalf("a sees %v after b's g2 viewers left, want %v", got, want)
	}

	// b goes silent: a keeps beating and stops counting b within the TTL.
	start := time.Now()
	wait.For(t, ttl+5*time.Second, "b's count to expire", func() bool {
		return len(mustSync(t, a, map[string]int{"g1": 2})) == 0
	})
	if d := time.Since(start); d > ttl+time.Second {
		t.Errorf("b expired after %v, TTL %v", d, ttl)
	}
	// Nothing outlives the replicas: with a silent too, every key expires.
	wait.For(t, ttl+5*time.Second, "every presence key to expire", func() bool {
		n, err := rdb.DBSize(context.Background()).Result()
		return err == nil && n == 0
	})
}

// Leave removes a replica's count at once.
func TestLeave(t *testing.T) {
	srv := redistest.MustStart(t)
	rdb := srv.Client(t)
	a := mustNew(t, presence.Config{Client: rdb, Replica: "a"})
	b := mustNew(t, presence.Config{Client: rdb, Replica: "b"})
	mustSync(t, a, map[string]int{"g1": 1})
	if err := a.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := mustSync(t, b, nil); len(got) != 0 {
		t.Fatalf("b sees %v after a left", got)
	}
	if n, _ := rdb.Exists(context.Background(), event.PresenceKey("a")).Result(); n != 0 {
		t.Fatalf("a's hash is still there")
	}
	if s, _ := rdb.ZScore(context.Background(), event.PresenceReplicasKey, "a").Result(); s != 0 {
		t.Fatalf("a is still a member")
	}
}

func TestNewConfig(t *testing.T) {
	srv := redistest.MustStart(t)
	for _, cfg := range []presence.Config{{Replica: "a"}, {Client: srv.Client(t)}} {
		if _, err := presence.New(cfg); !errors.Is(err, presence.ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
}

// TestNameReplacesPredecessor: a replica that holds a name (a consumer's,
// under its lease) removes, at its first Sync, the count the name's
// previous process left (a crash: no Leave), instead of both being counted
// until that one expires. A web-only replica of the same host name and
// other names' replicas keep theirs; nothing named outlives its TTL.
func TestNameReplacesPredecessor(t *testing.T) {
	srv := redistest.MustStart(t)
	rdb := srv.Client(t)
	const ttl = time.Minute // nothing expires during the test
	crashed := mustNew(t, presence.Config{Client: rdb, Replica: presence.ReplicaID("r1"), TTL: ttl, Name: "feed/r1"})
	webOnly := mustNew(t, presence.Config{Client: rdb, Replica: presence.ReplicaID("r1"), TTL: ttl})
	peer := mustNew(t, presence.Config{Client: rdb, Replica: presence.ReplicaID("r2"), TTL: ttl, Name: "feed/r2"})
	other := mustNew(t, presence.Config{Client: rdb, Replica: presence.ReplicaID("r1"), TTL: ttl, Name: "other/r1"})
	watcher := mustNew(t, presence.Config{Client: rdb, Replica: presence.ReplicaID("w"), TTL: ttl})
	mustSync(t, crashed, map[string]int{"g1": 2})
	mustSync(t, webOnly, map[string]int{"g1": 5})
	mustSync(t, peer, map[string]int{"g1": 1})
	mustSync(t, other, map[string]int{"g1": 7})
	if got, want := mustSync(t, watcher, nil), map[string]int{"g1": 15}; !maps.Equal(got, want) {
		t.Fatalf("before the restart: %v, want %v", got, want)
	}

	// r1 restarts: its two viewers, one of whom came back.
	restarted := mustNew(t, presence.Config{Client: rdb, Replica: presence.ReplicaID("r1"), TTL: ttl, Name: "feed/r1"})
	if got, want := mustSync(t, restarted, map[string]int{"g1": 1}), map[string]int{"g1": 13}; !maps.Equal(got, want) {
		t.Fatalf("the restarted replica sees %v, want %v (without its predecessor's 2)", got, want)
	}
	if got, want := mustSync(t, watcher, nil), map[string]int{"g1": 14}; !maps.Equal(got, want) {
		t.Fatalf("after the restart: %v, want %v (the predecessor's 2 replaced by 1)", got, want)
	}
	// Its later beats leave the others alone.
	mustSync(t, restarted, map[string]int{"g1": 1})
	mustSync(t, peer, map[string]int{"g1": 1})
	if got, want := mustSync(t, watcher, nil), map[string]int{"g1": 14}; !maps.Equal(got, want) {
		t.Fatalf("a beat later: %v, want %v", got, want)
	}
	if d, err := rdb.PTTL(context.Background(), event.PresenceNameKey("feed/r1")).Result(); err != nil || d <= 0 || d > ttl {
		t.Fatalf("the name's key has TTL %v (%v), want at most %v", d, err, ttl)
	}
}
