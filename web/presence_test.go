package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/presence"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/web"
)

// waitWatching reads frames until a watching frame says n.
func (w *wsClient) waitWatching(n int) {
	w.tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last := -1
	for time.Now().Before(deadline) {
		f, err := w.readAny(time.Until(deadline))
		if err != nil {
			w.tb.Fatalf("waiting for %d watching (last %d): %v", n, last, err)
		}
		if f.T == "watching" {
			if last = f.N; last == n {
				return
			}
		}
	}
	w.tb.Fatalf("no watching frame with %d (last %d)", n, last)
}

// Viewers are counted over replicas that share a Redis: every socket sees
// the sum, live, and the index shows it per game; a replica that closes
// takes its viewers with it.
func TestWatchingAcrossReplicas(t *testing.T) {
	rdb := redistest.MustStart(t).Client(t)
	withPresence := func(name string) func(*web.Config) {
		return func(c *web.Config) {
			// A count outlives a late beat (a loaded host); a closed
			// replica's goes at once all the same (Leave).
			p, err := presence.New(presence.Config{Client: rdb, Replica: presence.ReplicaID(name), TTL: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			c.Presence = p
			c.PresenceEvery = 100 * time.Millisecond
		}
	}
	a := MustOpenEnv(t, withPresence("a"))
	b := MustOpenEnv(t, withPresence("b"))
	b.db = a.db // one game, two stores: counts are per game name
	a.upsert(a.gen("g1").chats(t, 1)...)

	a1 := a.dial("g1", 0)
	a1.waitWatching(1)
	a2 := a.dial("g1", 0)
	b1 := b.dial("g1", 0)
	for _, w := range []*wsClient{a1, a2, b1} {
		w.waitWatching(3)
	}
	waitFor(t, 5*time.Second, "index counts 3", func() bool {
		_, body := a.get("/fragments/games")
		return strings.Contains(body, `class="num watching" data-n="3"`)
	})
	_, page := a.get("/games/g1")
	if !strings.Contains(page, `id="watching" class="watching" data-n="3"`) {
		t.Fatalf("game page lacks 3 watching")
	}

	a2.c.CloseNow()
	a1.waitWatching(2)
	b1.waitWatching(2)
	if err := b.srv.Close(); err != nil {
		t.Fatal(err)
	}
	a1.waitWatching(1)
}

// TestWatchingWithoutRedis: while Redis is away, a replica keeps its peers'
// counts for the presence TTL, then counts its own viewers alone: a dead
// peer's viewers are not shown for as long as the outage lasts.
func TestWatchingWithoutRedis(t *testing.T) {
	srv := redistest.MustStart(t)
	rdb := srv.Client(t)
	withPresence := func(name string) func(*web.Config) {
		return func(c *web.Config) {
			p, err := presence.New(presence.Config{Client: rdb, Replica: presence.ReplicaID(name), TTL: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			c.Presence = p
			c.PresenceEvery = 100 * time.Millisecond
			c.PresenceTTL = time.Second
		}
	}
	a := MustOpenEnv(t, withPresence("a"))
	b := MustOpenEnv(t, withPresence("b"))
	b.db = a.db
	a.upsert(a.gen("g1").chats(t, 1)...)
	a1 := a.dial("g1", 0)
	b.dial("g1", 0)
	a1.waitWatching(2)
	srv.Kill(t)
	a1.waitWatching(1)
}

// TestWatchingJoinerHearsLeave: a socket is told its game's count as it
// joins; when another socket leaves before the beat that shares the join
// (a reloaded tab: the new page's socket opens before the server sees the
// old one close), that beat's count equals the one last broadcast, yet the
// joiner was told one more. It must still hear the count: a viewer alone
// read "2 watching" until the count moved again.
func TestWatchingJoinerHearsLeave(t *testing.T) {
	srv := redistest.MustStart(t)
	rdb := srv.Client(t)
	e := MustOpenEnv(t, func(c *web.Config) {
		p, err := presence.New(presence.Config{Client: rdb, Replica: "a", TTL: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		c.Presence = p
		c.PresenceEvery = 100 * time.Millisecond
		c.PresenceTTL = 30 * time.Second
	})
	e.upsert(e.gen("g1").chats(t, 1)...)
	old := e.dial("g1", 0)
	old.waitWatching(1)

	// A paused Redis holds each beat's sync for seconds: the join and the
	// leave below fall between two beats.
	srv.Pause(t)
	t.Cleanup(func() { srv.Resume(t) })
	tab := e.dial("g1", 0)
	tab.waitWatching(2)
	old.c.CloseNow()
	waitFor(t, 5*time.Second, "the old socket to leave", func() bool { return e.srv.Watching()["g1"] == 1 })
	srv.Resume(t)
	tab.waitWatching(1)
}
