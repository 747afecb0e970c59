package feed_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestStatusStreams: a status page shows the n most recent games and the
// read set's extra streams, once each, and counts the whole registry.
func TestStatusStreams(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	for i := range 5 {
		rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: float64(i), Member: fmt.Sprintf("s-%d", i)})
	}
	rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: 9, Member: "Not A Game"})
	got, total, err := feed.StatusStreams(ctx, rdb, 3, []string{stream("s-0"), stream("s-4")})
	if err != nil {
		t.Fatal(err)
	}
	// The invalid member is the most recent: it takes a place but is not shown.
	want := []string{stream("s-4"), stream("s-3"), stream("s-0")}
	if !slices.Equal(got, want) || total != 6 {
		t.Fatalf("got %v (total %d); want %v (total 6)", got, total, want)
	}
}
