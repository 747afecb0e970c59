package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestPruneRedisGoneMidRunSaysWhatWasDone: Redis lost in the middle of a
// run (here killed before the second game leaves the registry) stops it
// with the error. The run's output said nothing of what it had done by
// then: the first game was pruned, but only the plan's "remove" lines
// were printed, and the error named the second game alone, so an operator
// could not tell a run that removed nothing from one that removed all
// but one game. The error now says how many were pruned before it, and
// that another run finishes the one it stopped at.
func TestPruneRedisGoneMidRunSaysWhatWasDone(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	m := event.NewMinter(1)
	for _, game := range []string{"old-1", "old-2"} {
		evs, end := playToGameOver(t, game)
		if _, err := gamesim.Append(ctx, rdb, m, game, evs[:end+1]...); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "feed.db")
	mustRunCtl(t, s.Addr, "rebuild", "-db", path)
	register(t, rdb, "old-1", twoDaysAgo())
	register(t, rdb, "old-2", twoDaysAgo().Add(time.Second))
	onPruneStep(t, stepRegistry, func(game string) {
		if game == "old-2" {
			s.Kill(t)
		}
	})
	out, errOut, err := runCtl(t, s.Addr, "-timeout", "2s", "prune", "-older-than", "24h", "-db", path, "-yes")
	if err == nil || !strings.Contains(err.Error(), "prune old-2: ") ||
		!strings.Contains(err.Error(), "1 games pruned before it; run prune again to finish") {
		t.Errorf("prune with Redis gone at its second game: %v; want it to say the first was pruned\n%s%s", err, out, errOut)
	}
	if n := storedLines(t, path, "old-1"); n != 0 {
		t.Errorf("old-1 has %d lines after its prune", n)
	}
}
