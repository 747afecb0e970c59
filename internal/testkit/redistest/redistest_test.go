package redistest_test

import (
	"context"
	"testing"

	"github.com/codemojex/feed/internal/testkit/redistest"
)

func TestRestartKeepsAOFData(t *testing.T) {
	ctx := context.Background()
	s := redistest.MustStart(t, redistest.Options{AOF: true})
	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Restart(t)
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("after restart: got %q, %v; want v", got, err)
	}
}

func TestRestartWithoutAOFLosesData(t *testing.T) {
	ctx := context.Background()
	s := redistest.MustStart(t)
	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Restart(t)
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("after restart without AOF: exists=%d err=%v; want 0", n, err)
	}
}
