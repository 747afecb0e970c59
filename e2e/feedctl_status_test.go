package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestFeedctlStatusFollowsActivity: feedctl status inspects the most
// recently active games (-recent, default 200), says how many of the
// registry it shows, and inspects every game only when asked (-all), in
// pages of 500.
func TestFeedctlStatusFollowsActivity(t *testing.T) {
	ctx := context.Background()
	srv := redistest.MustStart(t)
	rdb := srv.Client(t)
	const games = 1200
	pipe := rdb.Pipeline()
	for i := range games {
		g := fmt.Sprintf("st-%04d", i)
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: event.StreamKey(g), Values: []string{"id", "x", "kind", "chat"}})
		pipe.ZAdd(ctx, event.RegistryKey, redis.Z{Score: float64(1000 + i), Member: g})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	rows := func(out string) map[string]bool {
		got := map[string]bool{}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "st-") {
				got[f[0]] = true
			}
		}
		return got
	}

	out, ok := feedctl(t, srv.URL(), "status", "-recent", "3")
	got := rows(out)
	if !ok || len(got) != 3 || !got["st-1199"] || !got["st-1197"] || got["st-1196"] ||
		!strings.Contains(out, "games: the 3 most recent of 1200") {
		t.Fatalf("status -recent 3: ok=%v, rows %v\n%s", ok, got, out)
	}
	out, ok = feedctl(t, srv.URL(), "status")
	if got := rows(out); !ok || len(got) != 200 || !got["st-1000"] || got["st-0999"] {
		t.Fatalf("status: ok=%v, %d rows; want the 200 most recent\n%.2000s", ok, len(got), out)
	}
	out, ok = feedctl(t, srv.URL(), "status", "-all")
	if got := rows(out); !ok || len(got) != games || !got["st-0000"] || !strings.Contains(out, "games: 1200 of 1200") {
		t.Fatalf("status -all: ok=%v, %d rows; want %d\n%.2000s", ok, len(got), games, out)
	}
	if !strings.Contains(out, `no consumer group "feed"`) {
		t.Errorf("status -all does not report the missing group per game:\n%.2000s", out)
	}
}
