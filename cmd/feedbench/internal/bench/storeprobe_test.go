package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
)

// TestStoreProbe: before the renderer has made its file, the probe reads 0
// and does not make it; then it counts what a real store committed, while
// that store stays open for writing.
func TestStoreProbe(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	p := newStoreProbe(path)
	defer p.Close()
	if n, err := p.Lines(ctx); n != 0 || err != nil {
		t.Fatalf("Lines before the file = %d, %v; want 0, nil", n, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the probe made the file (stat: %v)", err)
	}

	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := event.NewMinter(1)
	for batch := range 3 {
		var evs []store.Event
		for i := range 4 {
			evs = append(evs, store.Event{EvtID: m.Next(time.Now()), Game: fmt.Sprintf("g%d", i), Kind: "chat",
				Payload: map[string]string{"kind": "chat", "text": "hi"}, HTML: "hi", StreamID: fmt.Sprintf("%d-%d", batch+1, i)})
		}
		if _, err := db.Upsert(ctx, evs); err != nil {
			t.Fatal(err)
		}
		want := int64(4 * (batch + 1))
		if n, err := p.Lines(ctx); n != want || err != nil {
			t.Fatalf("Lines after batch %d = %d, %v; want %d", batch, n, err, want)
		}
		if n, err := p.Count(ctx); n != want || err != nil {
			t.Fatalf("Count after batch %d = %d, %v; want %d", batch, n, err, want)
		}
	}
}
