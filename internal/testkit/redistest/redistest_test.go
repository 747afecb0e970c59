package redistest_test

import (
	"context"
	"os/exec"
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

func TestBinaryHonoursServerEnv(t *testing.T) {
	t.Setenv(redistest.ServerEnv, "no-such-server-binary")
	if _, err := redistest.Binary(); err == nil {
		t.Fatalf("%s naming a missing binary: no error", redistest.ServerEnv)
	}
	for _, name := range []string{"redis-server", "valkey-server"} {
		want, err := exec.LookPath(name)
		if err != nil {
			continue // CI installs both; a developer may have one
		}
		t.Setenv(redistest.ServerEnv, name)
		if got, err := redistest.Binary(); err != nil || got != want {
			t.Errorf("%s=%s: Binary() = %q, %v; want %q", redistest.ServerEnv, name, got, err, want)
		}
	}
}
