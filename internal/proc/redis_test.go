package proc_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/proc"
)

// TestStartRedisPortTakenByAnotherServer: a Redis started on a port that
// another server took between the probe and the bind (another test's, on
// a shared machine) fails to start, and Start says so. It used to take
// the other server's PONG for its own and return it as started: the test
// then wrote to, flushed and killed what it believed its own server, which
// was someone else's, while its own had exited.
func TestStartRedisPortTakenByAnotherServer(t *testing.T) {
	other, err := proc.StartRedis(t.TempDir(), proc.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Stop)
	bin, err := proc.RedisBinary()
	if err != nil {
		t.Fatal(err)
	}
	s, err := proc.StartRedisOn(bin, t.TempDir(), other.Port, proc.RedisOptions{})
	if err == nil {
		pid := s.Pid()
		s.Stop()
		t.Fatalf("a second server on %s, taken by the first (pid %d): started (pid %d), want an error", other.Addr, other.Pid(), pid)
	}
	t.Logf("StartRedisOn a taken port: %v", err)
	// The first one was not touched.
	c := redis.NewClient(&redis.Options{Addr: other.Addr})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("the server that held the port: %v", err)
	}
}
