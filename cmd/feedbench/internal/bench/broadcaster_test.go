package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/cmd/feedbench/internal/bench"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// The bare broadcaster delivers every published line frame to every
// client of its game, and only to those, on each of its engines.
func TestBroadcasterDelivers(t *testing.T) {
	for _, engine := range []string{bench.EngineStd, bench.EngineNbioStd} {
		t.Run(engine, func(t *testing.T) { testBroadcasterDelivers(t, engine) })
	}
}

func testBroadcasterDelivers(t *testing.T, engine string) {
	r, err := bench.StartRedis(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rdb, err := r.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- bench.ServeBroadcasterEngine(ctx, engine, r.URL(), "127.0.0.1:0", func(a string) { addr <- a })
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("broadcaster: %v", err)
		}
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a
	case err := <-done:
		t.Fatal(err)
	}
	games := []string{"bb-1", "bb-2", "bb-3"}
	sw, err := bench.Connect(ctx, bench.SwarmConfig{BaseURL: url, Games: games, N: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	w := bench.NewPublisher(rdb, event.NewMinter(1), games)
	for range 3 {
		if err := w.Broadcast(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wait.For(t, 10*time.Second, "18 deliveries", func() bool { return len(sw.Deliveries()) >= 18 })
	for _, d := range sw.Deliveries() {
		if _, _, ok := w.Sent(d.ID); !ok || !strings.HasPrefix(d.ID, "evt_") {
			t.Fatalf("delivery of %q, not a published line", d.ID)
		}
	}
	if n := len(sw.Deliveries()); n != 18 {
		t.Fatalf("%d deliveries, want 3 rounds × 6 clients", n)
	}
	if n, err := sw.Dropped(); n != 0 {
		t.Fatalf("%d clients dropped: %v", n, err)
	}
}
