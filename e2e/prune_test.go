package e2e_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/proctest"
)

// TestPrune: feedctl prune removes the games that ended before the cut from
// the registry and the store, after a dry run that changes nothing and a
// refused confirmation; a game still being played stays.
func TestPrune(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	c.start("r1")
	play := func(game string, over bool) {
		w := c.writer(game)
		w.add(w.mint(), event.KindGameStarted, "title", "t", "rounds", "1", "code_length", "4", "palette", "🍎🍌🍇🍓")
		w.add(w.mint(), event.KindPlayerJoined, "player", "ann", "avatar", "🦊")
		if over {
			w.add(w.mint(), event.KindGameOver, "winner", "ann")
		}
		c.waitStored(game, w.ids, 20*time.Second)
	}
	play("ended-1", true)
	play("ended-2", true)
	play("playing-1", false)
	games := []string{"ended-1", "ended-2", "playing-1"}
	// Stored is not acked yet: prune keeps games the group has not finished.
	proctest.WaitFor(t, 20*time.Second, func() bool {
		for _, g := range games {
			gs, err := c.rdb.XInfoGroups(ctx, event.StreamKey(g)).Result()
			if err != nil || len(gs) != 1 || gs[0].Pending != 0 || gs[0].Lag != 0 {
				return false
			}
		}
		return true
	}, "every game acked")

	registered := func(g string) bool { return c.rdb.ZScore(ctx, event.RegistryKey, g).Err() == nil }
	stored := func(g string) bool { return len(c.storeIDs(g)) > 0 }
	unchanged := func(step string) {
		t.Helper()
		for _, g := range games {
			if !registered(g) || !stored(g) {
				t.Fatalf("after %s: %s left the registry (%v) or the store (%v)", step, g, !registered(g), !stored(g))
			}
		}
	}
	prune := func(stdin string, args ...string) (string, error) {
		all := append([]string{"-redis", c.redis.URL(), "prune", "-db", c.dbPath}, args...)
		cmd := exec.Command(filepath.Join(proctest.Binaries(t), "feedctl"), all...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := prune("", "-older-than", "1ms", "-dry-run")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, g := range []string{"ended-1", "ended-2"} {
		if !strings.Contains(out, "remove "+g+": registry, store") {
			t.Errorf("dry run does not plan to remove %s:\n%s", g, out)
		}
	}
	if strings.Contains(out, "playing-1") {
		t.Errorf("dry run mentions the game still being played:\n%s", out)
	}
	unchanged("the dry run")

	// Without a terminal nobody can confirm: even a piped "y" is refused,
	// as for every destructive command; -yes is how a script says it.
	for _, answer := range []string{"n\n", "y\n"} {
		if out, err := prune(answer, "-older-than", "1ms"); err == nil || !strings.Contains(out, "stdin is not a terminal") || !strings.Contains(out, "nothing removed") {
			t.Fatalf("confirmation %q without a terminal: err %v\n%s", answer, err, out)
		}
	}
	unchanged("a confirmation without a terminal")

	// Nothing ended an hour ago.
	if out, err := prune("", "-older-than", "1h", "-yes"); err != nil || !strings.Contains(out, "0 to remove") {
		t.Fatalf("-older-than 1h: %v\n%s", err, out)
	}
	unchanged("-older-than 1h")

	if out, err := prune("", "-older-than", "1ms", "-yes"); err != nil || !strings.Contains(out, "pruned 2 games") {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	for _, g := range []string{"ended-1", "ended-2"} {
		if registered(g) || stored(g) {
			t.Errorf("%s still in the registry (%v) or the store (%v)", g, registered(g), stored(g))
		}
		// Without -streams the streams stay: rebuild no longer sees the
		// game (it reads the registry), replay still can.
		if n, _ := c.rdb.XLen(ctx, event.StreamKey(g)).Result(); n == 0 {
			t.Errorf("%s: stream deleted without -streams", g)
		}
	}
	if !registered("playing-1") || !stored("playing-1") {
		t.Fatal("the game still being played was pruned")
	}
}
