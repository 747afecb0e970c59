package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/internal/testkit/acldocs"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestACLUsers: the ACL users of docs/operations.md, "A Redis with ACL
// users", created from the doc's own lines on every node, are enough for
// each program, on a single node and on a cluster of 3 masters. As them,
// two renderers store every well-formed entry gamesim writes and
// dead-letter every malformed one, claim the entries a dead peer left
// pending, serve the status and count a viewer; one is SIGKILLed and comes back, taking its
// lease again, and handles a second run of gamesim; and feedctl runs
// ping, status, dead list, dead requeue, replay, rebuild, prune and dead
// drop. No node's ACL LOG has an entry afterwards (the server records
// every refused command there, a script's too), and no output says
// NOPERM.
func TestACLUsers(t *testing.T) {
	rules := acldocs.Rules(t)
	tests := []struct {
		name    string
		cluster bool
	}{
		{"single node", false},
		{"cluster", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				nodes []*redistest.Server
				admin redis.UniversalClient
				hosts string // the URL after redis://, no user
			)
			if tt.cluster {
				rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
				nodes, admin = rc.Nodes, rc.Client(t)
				hosts = strings.TrimPrefix(rc.URL(), "redis://")
			} else {
				s := redistest.MustStart(t)
				nodes, admin = []*redistest.Server{s}, s.Client(t)
				hosts = strings.TrimPrefix(s.URL(), "redis://")
			}
			ctx := context.Background()
			urls := map[string]string{}
			acldocs.SetUsers(t, nodes)
			for user := range rules {
				urls[user] = "redis://" + user + ":" + acldocs.Password(user) + "@" + hosts
			}
			for _, n := range nodes {
				if err := n.Client(t).Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
					t.Fatal(err)
				}
			}

			// A dead peer: entries of its game read as "ghost", who never
			// comes back, left pending for the renderers to claim.
			ghost := "acl-ghost"
			w := event.NewMinter(time.Now().UnixNano())
			var items []gamesim.Item
			for i := range 3 {
				items = append(items, gamesim.Item{Game: ghost, ID: w.Next(time.Now()), Event: gamesim.Event{Kind: "chat",
					Fields: []gamesim.Field{{Name: "player", Value: "p1"}, {Name: "text", Value: fmt.Sprint("left by a dead peer ", i)}}}})
			}
			// It is over: prune -streams removes it.
			items = append(items, gamesim.Item{Game: ghost, ID: w.Next(time.Now()), Event: gamesim.Event{Kind: event.KindGameOver,
				Fields: []gamesim.Field{{Name: "winner", Value: "p1"}}}})
			if err := gamesim.AppendItems(ctx, admin, time.Now(), items...); err != nil {
				t.Fatal(err)
			}
			// A game whose dead letter feedctl requeues, fixed.
			fixed := "acl-fixed"
			fixedGood, fixedBad := w.Next(time.Now()), w.Next(time.Now())
			if err := gamesim.AppendItems(ctx, admin, time.Now(),
				gamesim.Item{Game: fixed, ID: fixedGood, Event: gamesim.Event{Kind: "chat",
					Fields: []gamesim.Field{{Name: "player", Value: "p1"}, {Name: "text", Value: "fine"}}}},
				gamesim.Item{Game: fixed, ID: fixedBad, Event: gamesim.Event{Kind: "chat",
					Fields: []gamesim.Field{{Name: "player", Value: "p1"}}}}, // no text
			); err != nil {
				t.Fatal(err)
			}
			if err := admin.XGroupCreate(ctx, event.StreamKey(ghost), "feed", "0").Err(); err != nil {
				t.Fatal(err)
			}
			if err := admin.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "feed", Consumer: "ghost",
				Streams: []string{event.StreamKey(ghost), ">"}, Count: 10}).Err(); err != nil {
				t.Fatal(err)
			}

			c := &cluster{tb: t, url: urls["feed-renderer"], dbPath: filepath.Join(t.TempDir(), "feed.db"), group: "feed",
				renderers: map[string]*renderer{}}
			r1 := c.start("r1")
			r2 := c.start("r2")

			games := func(prefix string, n int) []string {
				names := make([]string, n)
				for i := range names {
					names[i] = gamesim.GameName(prefix, i+1)
				}
				return names
			}
			simulate := func(prefix string) []string {
				t.Helper()
				sim := proctest.Start(t, "gamesim-"+prefix, "gamesim", []string{"-redis", urls["feed-writer"],
					"-games", "4", "-events", "30", "-rate", "200", "-seed", "5", "-prefix", prefix, "-bad", "0.1"})
				wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				if err := sim.Wait(wctx); err != nil {
					t.Fatalf("gamesim as feed-writer: %v\n%s", err, sim.Output())
				}
				if out := sim.Output(); noPerm(out) {
					t.Errorf("gamesim as feed-writer: %s", out)
				}
				return games(prefix, 4)
			}
			first := append(simulate("acl"), ghost)
			checkAllHandled(t, admin, c.dbPath, c.group, first, time.Minute)
			lettered := ""
			for _, g := range first {
				if n, err := admin.XLen(ctx, event.DeadKey(g)).Result(); err == nil && n > 0 {
					lettered = g
					break
				}
			}
			if lettered == "" {
				t.Fatal("no game has a dead letter: gamesim -bad 0.1 wrote no malformed entry, and the dead-letter path went untried")
			}
			resp, err := http.Get(r2.url("/api/status"))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /api/status: %d %s", resp.StatusCode, body)
			}

			// A viewer: the renderer counts it in its presence hash,
			// and sums every replica's.
			watchCtx, stopWatching := context.WithCancel(ctx)
			req, _ := http.NewRequestWithContext(watchCtx, http.MethodGet, r2.url("/games/"+first[0]+"/events?after=0"), nil)
			watch, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if watch.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %s", req.URL, watch.Status)
			}
			wait.For(t, 30*time.Second, "the viewer of "+first[0]+" in the presence counts", func() bool {
				replicas, err := admin.ZRange(ctx, event.PresenceReplicasKey, 0, -1).Result()
				if err != nil {
					return false
				}
				for _, rep := range replicas {
					if n, _ := admin.HGet(ctx, event.PresenceKey(rep), first[0]).Int(); n > 0 {
						return true
					}
				}
				return false
			})
			stopWatching()
			watch.Body.Close()

			// A SIGKILL: the lease is taken again by the name's next life.
			r1.Kill()
			c.restart(r1)
			second := simulate("acl2")
			checkAllHandled(t, admin, c.dbPath, c.group, append(second, first...), time.Minute)

			feedctl := func(args ...string) string {
				t.Helper()
				out := run(t, "feedctl", append([]string{"-redis", urls["feedctl"], "-group", c.group}, args...)...)
				if noPerm(out) {
					t.Errorf("feedctl %v: %s", args, out)
				}
				return out
			}
			feedctl("ping")
			feedctl("status", "-all")
			feedctl("dead", "list", "-game", lettered)
			var letter string
			wait.For(t, 30*time.Second, "the dead letter of "+fixed, func() bool {
				xs, err := admin.XRange(ctx, event.DeadKey(fixed), "-", "+").Result()
				if err != nil || len(xs) != 1 {
					return false
				}
				letter = xs[0].ID
				return true
			})
			feedctl("dead", "list", "-game", fixed)
			feedctl("dead", "requeue", "-game", fixed, "-id", letter, "-set", "text=fixed", "-yes")
			c.waitStored(fixed, []string{fixedGood, fixedBad}, 30*time.Second)
			feedctl("replay", "-game", first[0], "-yes")
			checkAllHandled(t, admin, c.dbPath, c.group, append(second, first...), time.Minute)
			feedctl("rebuild", "-db", filepath.Join(t.TempDir(), "rebuilt.db"), "-yes")

			// Stopped, the renderers release their leases and presence;
			// then the last of feedctl's writes.
			for _, r := range []*renderer{r1, r2} {
				if err := r.Term(30 * time.Second); err != nil {
					t.Errorf("renderer %s: stop: %v", r.name, err)
				}
				if out := r.Output(); noPerm(out) {
					t.Errorf("renderer %s: %s", r.name, out)
				}
			}
			feedctl("dead", "drop", "-game", lettered, "-all", "-yes")
			out := feedctl("prune", "-older-than", "1ms", "-streams", "-yes")
			_, scoreErr := admin.ZScore(ctx, event.RegistryKey, ghost).Result()
			if n, err := admin.Exists(ctx, event.StreamKey(ghost)).Result(); err != nil || n != 0 || scoreErr != redis.Nil {
				t.Errorf("after prune -streams, %s's stream exists: %d (%v), registered: %v:\n%s", ghost, n, err, scoreErr, out)
			}

			for _, n := range nodes {
				v, err := n.Client(t).Do(ctx, "ACL", "LOG").Slice()
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range v {
					t.Errorf("ACL LOG of %s: %v", n.Addr, e)
				}
			}
		})
	}
}

// noPerm reports whether out says a command was refused by an ACL.
func noPerm(out string) bool {
	return strings.Contains(out, "NOPERM") || strings.Contains(out, "ACL failure in script") ||
		strings.Contains(out, "The user executing the script can't")
}

// TestACLRefusalLeavesPending: a renderer whose ACL user lacks one grant
// its dead letters need (XADD, which the dead-letter script runs) stores
// the good entries, and leaves the entry to dead-letter pending, unacked
// and unlettered, saying why; it does not retry it before -min-idle (the
// server logs one refusal while later entries are read and stored). Once
// the grant is given, the renderer's next life, which takes its own
// pending entries back at once, writes the letter and acks the entry.
func TestACLRefusalLeavesPending(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	rendererWithout(t, c, "+xadd")
	if err := c.rdb.Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
		t.Fatal(err)
	}
	r := c.start("r1", "-min-idle", "1h")

	const game = "acl-refused"
	w := c.writer(game)
	good := []string{w.chat("p1", "before")}
	bad := w.mint()
	w.add(bad, "chat") // no player, no text: to dead-letter
	good = append(good, w.chat("p1", "after"))
	c.waitStored(game, good, 30*time.Second)
	wait.For(t, 30*time.Second, "the renderer to say the dead letter failed", func() bool {
		return strings.Contains(r.Output(), "dead-letter failed; entry left pending")
	})
	wait.For(t, 30*time.Second, "the renderer to say what the ACL refused and what to do", func() bool {
		out := r.Output()
		return noPerm(out) && strings.Contains(out, redisconn.ACLRefusal+" a command of a script (EVAL") &&
			strings.Contains(out, acldocs.Section)
	})
	// Later entries are read and stored, turns pass; the refused one is
	// not tried again before -min-idle.
	for i := range 3 {
		good = append(good, w.chat("p1", fmt.Sprint("later ", i)))
		c.waitStored(game, good, 30*time.Second)
	}
	pend, err := c.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: event.StreamKey(game), Group: c.group, Start: "-", End: "+", Count: 10}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(pend) != 1 || pend[0].RetryCount != 1 {
		t.Fatalf("pending %+v, want only %s, delivered once", pend, bad)
	}
	xs, err := c.rdb.XRangeN(ctx, event.StreamKey(game), pend[0].ID, pend[0].ID, 1).Result()
	if err != nil || len(xs) != 1 || xs[0].Values[event.FieldID] != bad {
		t.Fatalf("pending entry %s is %v (%v), want %s", pend[0].ID, xs, err, bad)
	}
	if n, err := c.rdb.XLen(ctx, event.DeadKey(game)).Result(); err != nil || n != 0 {
		t.Fatalf("dead letters: %d, %v; want none", n, err)
	}
	if n := aclRefusals(t, c.rdb, "xadd"); n != 1 {
		t.Fatalf("ACL LOG counts %d refusals of xadd, want 1 (retried before -min-idle?)", n)
	}

	if err := c.rdb.Do(ctx, "ACL", "SETUSER", "feed-renderer", "+xadd").Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Term(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.restart(r)
	wait.For(t, 30*time.Second, "the refused entry's letter and ack", func() bool {
		n, _ := c.rdb.XLen(ctx, event.DeadKey(game)).Result()
		p, _ := c.rdb.XPending(ctx, event.StreamKey(game), c.group).Result()
		return n == 1 && p != nil && p.Count == 0
	})
	c.waitStored(game, good, 30*time.Second)
}

// aclRefusals returns the count ACL LOG gives the refusals of command
// (lower case, as the log names it).
func aclRefusals(tb testing.TB, rdb *redis.Client, command string) int64 {
	tb.Helper()
	var n int64
	for _, e := range acldocs.Entries(tb, rdb) {
		if c, ok := e["count"].(int64); ok && e["object"] == command {
			n += c
		}
	}
	return n
}

// TestACLScriptsRefused: a renderer whose ACL user may run no script
// (no +eval, +evalsha) cannot take its consumer name's lease, a script: it
// serves, reads nothing, so takes nothing pending, says not ready with the
// server's refusal, and logs which command was refused and where the
// grants are listed. Granted, it takes the lease and stores every entry.
func TestACLScriptsRefused(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	rendererWithout(t, c, "+eval", "+evalsha")
	const game = "acl-noscript"
	w := c.writer(game)
	want := []string{w.chat("p1", "one"), w.chat("p1", "two")}
	r := c.start("r1")
	var body string
	wait.For(t, 30*time.Second, "/readyz to say Redis refuses the renderer, and the log what", func() bool {
		var code int
		code, body = readyz(r)
		out := r.Output()
		return code == http.StatusServiceUnavailable && noPerm(body) &&
			strings.Contains(out, redisconn.ACLRefusal+" EVALSHA") && strings.Contains(out, acldocs.Section)
	})
	if got := c.storeIDs(game); len(got) != 0 {
		t.Fatalf("stored %v without a lease", got)
	}
	if p, err := c.rdb.XPending(ctx, event.StreamKey(game), c.group).Result(); err == nil && p.Count != 0 {
		t.Fatalf("%d entries pending without a lease", p.Count)
	}
	if err := c.rdb.Do(ctx, "ACL", "SETUSER", "feed-renderer", "+eval", "+evalsha").Err(); err != nil {
		t.Fatal(err)
	}
	c.waitStored(game, want, 30*time.Second)
}

// rendererWithout creates the docs' feed-renderer user, password "pw",
// on c's server without the grants drop, and points the renderers c
// starts at it.
func rendererWithout(tb testing.TB, c *cluster, drop ...string) {
	tb.Helper()
	rule := []any{"ACL", "SETUSER", "feed-renderer"}
	for _, w := range acldocs.Rules(tb)["feed-renderer"] {
		switch {
		case w == ">PASSWORD":
			w = ">pw"
		case slices.Contains(drop, w):
			continue
		}
		rule = append(rule, w)
	}
	if err := c.rdb.Do(context.Background(), rule...).Err(); err != nil {
		tb.Fatal(err)
	}
	c.url = "redis://feed-renderer:pw@" + strings.TrimPrefix(c.redis.URL(), "redis://")
}
