package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/internal/testkit/browsertest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

func watching(tb testing.TB, ctx context.Context) string {
	tb.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('watching').dataset.n`))
	if err != nil {
		tb.Fatalf("read watching: %v", err)
	}
	return s
}

func waitWatching(tb testing.TB, ctx context.Context, want string, timeout time.Duration) {
	tb.Helper()
	var got string
	wait.Until(tb, timeout, func() bool { got = watching(tb, ctx); return got == want },
		func() string { return fmt.Sprintf("%s watching (shows %s)", want, got) })
}

// indexWatching is the game's "watching" cell on r's index fragment.
func indexWatching(tb testing.TB, r *renderer, game string) string {
	tb.Helper()
	resp, err := http.Get(r.url("/fragments/games"))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	row := string(b)
	if i := strings.Index(row, `data-game="`+game+`"`); i >= 0 {
		row = row[i:]
		if j := strings.Index(row, `class="num watching" data-n="`); j >= 0 {
			row = row[j+len(`class="num watching" data-n="`):]
			return row[:strings.IndexByte(row, '"')]
		}
	}
	return ""
}

// TestBrowserWatchingAcrossReplicas: "N watching" counts the sockets open
// on every replica, on the game page and the index, live; when a replica is
// SIGKILLed its viewers drop out within its presence TTL (issue 13).
func TestBrowserWatchingAcrossReplicas(t *testing.T) {
	c := newCluster(t)
	fast := []string{"-presence-every", "200ms", "-presence-ttl", "1s"}
	r1 := c.start("r1", fast...)
	r2 := c.start("r2", fast...)
	w := c.writer("watch")
	w.chat("ada", "hello")
	c.waitStored("watch", w.ids, 10*time.Second)

	ctx := browsertest.MustStart(t)
	open(t, ctx, r1.url("/games/watch"))
	waitConn(t, ctx, "live", 5*time.Second)
	waitWatching(t, ctx, "1", 5*time.Second)

	// Two viewers on the other replica (tabs elsewhere: plain websockets
	// that read whatever comes).
	for i := 0; i < 2; i++ {
		cl := mustDial(t, r2, "watch", 0)
		go func() {
			for {
				if _, _, err := cl.conn.Read(context.Background()); err != nil {
					return
				}
			}
		}()
	}
	waitWatching(t, ctx, "3", 5*time.Second)
	for _, r := range []*renderer{r1, r2} {
		wait.Until(t, 5*time.Second, func() bool { return indexWatching(t, r, "watch") == "3" },
			func() string {
				return fmt.Sprintf("%s's index to show 3 watching (shows %q)", r.name, indexWatching(t, r, "watch"))
			})
	}

	r2.Kill()
	killed := time.Now()
	// TTL 1s, beat 200ms: gone well within 5 s.
	waitWatching(t, ctx, "1", 5*time.Second)
	t.Logf("a SIGKILLed replica's viewers dropped out after %v", time.Since(killed).Round(10*time.Millisecond))
	if got := indexWatching(t, r1, "watch"); got != "1" {
		t.Fatalf("index shows %q watching after the kill, want 1", got)
	}
}

// TestRestartReplacesWatching: a renderer SIGKILLed and started again
// under its name counts its viewers once: the new process's first beat
// removes the count its predecessor left, where the two were added up
// until the old one expired (-presence-ttl, a minute here).
func TestRestartReplacesWatching(t *testing.T) {
	c := newCluster(t)
	slow := []string{"-presence-every", "200ms", "-presence-ttl", "60s"}
	r1 := c.start("r1", slow...)
	r2 := c.start("r2", slow...)
	w := c.writer("watch")
	w.chat("ada", "hello")
	c.waitStored("watch", w.ids, 10*time.Second)

	drain := func(cl *wsClient) {
		go func() {
			for {
				if _, _, err := cl.conn.Read(context.Background()); err != nil {
					return
				}
			}
		}()
	}
	for i := 0; i < 2; i++ {
		drain(mustDial(t, r1, "watch", 0))
	}
	shows := func(want string) func() bool {
		return func() bool { return indexWatching(t, r2, "watch") == want }
	}
	describe := func(want string) func() string {
		return func() string {
			return fmt.Sprintf("r2's index to show %s watching (shows %q)", want, indexWatching(t, r2, "watch"))
		}
	}
	wait.Until(t, 10*time.Second, shows("2"), describe("2"))

	// The crash drops r1's two sockets; one viewer comes back to the
	// restarted r1.
	r1.Kill()
	c.restart(r1)
	restarted := time.Now()
	drain(mustDial(t, r1, "watch", 0))
	wait.Until(t, 20*time.Second, shows("1"), describe("1 (the predecessor's 2 replaced, well before their 60 s TTL)"))
	t.Logf("the restarted r1's count replaced its predecessor's %v after its start", time.Since(restarted).Round(10*time.Millisecond))
}
