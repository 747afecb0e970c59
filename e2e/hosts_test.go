package e2e_test

import (
	"testing"
	"time"

	"github.com/codemojex/feed/internal/gamesim"
)

// TestTwoHosts: two hosts on one Redis, each with its own consumer group
// and its own store (docs/operations.md, "Many hosts"), each end up
// showing every game completely; a host that starts late catches up on
// the whole history.
func TestTwoHosts(t *testing.T) {
	a := newCluster(t)
	b := a.host("host-b")
	a.start("a1")
	a.start("a2")
	b.start("b1")
	run(t, "gamesim", "-redis", a.redis.URL(), "-games", "4", "-events", "150", "-rate", "0", "-seed", "31", "-prefix", "two", "-bad", "0.05")
	names := []string{}
	for i := 1; i <= 4; i++ {
		names = append(names, gamesim.GameName("two", i))
	}
	checkAllHandled(t, a.rdb, a.dbPath, a.group, names, 30*time.Second)
	checkAllHandled(t, b.rdb, b.dbPath, b.group, names, 30*time.Second)

	// A third host joins after the games: its new group starts at the
	// beginning of every stream.
	late := a.host("host-c")
	late.start("c1")
	checkAllHandled(t, late.rdb, late.dbPath, late.group, names, 30*time.Second)
}
