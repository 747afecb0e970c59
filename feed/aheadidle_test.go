package feed_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
)

// TestReadAheadPastMinIdle: a batch read ahead while the batch before it
// commits sits in this consumer's pending list, unhandled and not kept
// alive, for as long as that commit runs. When the commit outlasts
// MinIdle, a live peer's XAUTOCLAIM takes the read-ahead entries (their
// delivery count goes to 2) and handles them. The consumer that read them
// ahead must then not handle them again as new entries with Attempts 1
// (the server says 2, and the peer has them): each entry is handled once.
func TestReadAheadPastMinIdle(t *testing.T) {
	_, rdb := mustStart(t)
	key := stream("ahead-idle")
	const count = 5
	for range 2 * count {
		add(t, rdb, key)
	}

	var (
		mu        sync.Mutex
		handled   = map[string][]string{} // EVT id → who handled it, with which Attempts
		prepared  = make(chan struct{})
		prepOnce  sync.Once
		release   = make(chan struct{})
		firstOnce sync.Once
	)
	record := func(who string, m feed.Message) {
		mu.Lock()
		handled[m.ID] = append(handled[m.ID], who+":"+itoa(int(m.Attempts)))
		mu.Unlock()
	}
	handledBy := func(id string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(handled[id])
	}

	cfgA := baseConfig(t, rdb, "a", key)
	cfgA.Count = count
	cfgA.MinIdle = time.Second
	cfgA.BatchHandler = func(ctx context.Context, ms []feed.Message) []error {
		first := false
		firstOnce.Do(func() { first = true })
		if first {
			// The first batch commits slowly: until the peer has
			// taken what was read ahead meanwhile.
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
		}
		for _, m := range ms {
			record("a", m)
		}
		return make([]error, len(ms))
	}
	cfgA.Prepare = func(ctx context.Context, ms []feed.Message) func(context.Context) []error {
		prepOnce.Do(func() { close(prepared) })
		return func(ctx context.Context) []error {
			for _, m := range ms {
				record("a", m)
			}
			return make([]error, len(ms))
		}
	}
	mustOpen(t, cfgA)

	select {
	case <-prepared:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing was read ahead")
	}
	// Everything is delivered to a now: the first batch in its handler
	// (kept alive), the second read ahead. A live peer claims what goes
	// idle: after 2 s, so that only a stall of 1.5 s in a's keep-alive
	// (every 500 ms) could let it take the first batch too.
	cfgB := baseConfig(t, rdb, "b", key)
	cfgB.MinIdle = 2 * time.Second
	cfgB.Handler = func(ctx context.Context, m feed.Message) error {
		record("b", m)
		return nil
	}
	b := mustOpen(t, cfgB)
	waitFor(t, 10*time.Second, "the peer claims the entries read ahead", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) >= count
	})
	b.Close()
	close(release)

	// Only a reads now: once it has handled an entry written after, it
	// is done with the batch it read ahead.
	last := add(t, rdb, key)
	waitFor(t, 10*time.Second, "a handles the entry written last", func() bool { return handledBy(last) > 0 })
	waitFor(t, 10*time.Second, "nothing pending", func() bool { return pending(t, rdb, key) == 0 })

	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 2*count+1 {
		t.Errorf("%d entries handled, want %d", len(handled), 2*count+1)
	}
	for id, by := range handled {
		if len(by) != 1 {
			t.Errorf("%s handled %d times (%v); want once", id, len(by), by)
		}
	}
}
