package proc_test

import (
	"context"
	"errors"
	"net"
	"strconv"
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
	t.Cleanup(other.Close)
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

// TestPortReservedUntilClose: a server's port stays reserved while it is
// killed, so that no other server of the machine's tests takes it before
// it starts again (a test's renderers then joined another test's server
// and held its consumer names); Close frees it.
func TestPortReservedUntilClose(t *testing.T) {
	s, err := proc.StartRedis(t.TempDir(), proc.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if s.Port < 12000 || s.Port >= 32768 {
		t.Errorf("port %d, want one below the ephemeral range [32768, …) and from 12000", s.Port)
	}
	reserved := func(when string) {
		t.Helper()
		release, err := proc.Reserve(s.Port)
		if err == nil {
			release()
		}
		if !errors.Is(err, proc.ErrPortReserved) {
			t.Fatalf("Reserve(%d) %s: %v, want ErrPortReserved", s.Port, when, err)
		}
	}
	reserved("while the server runs")
	s.Stop()
	reserved("while the server is stopped")
	if err := s.Start(); err != nil {
		t.Fatalf("start again on %s: %v", s.Addr, err)
	}
	reserved("after it started again")
	s.Close()
	release, err := proc.Reserve(s.Port)
	if err != nil {
		t.Fatalf("Reserve(%d) after Close: %v", s.Port, err)
	}
	release()
}

// TestReserveAddr: an address handed out for a test's child stays
// reserved until released.
func TestReserveAddr(t *testing.T) {
	addr, release, err := proc.ReserveAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	if again, err := proc.Reserve(port); !errors.Is(err, proc.ErrPortReserved) {
		if err == nil {
			again()
		}
		t.Fatalf("Reserve(%d) of the address %s handed out: %v, want ErrPortReserved", port, addr, err)
	}
	release()
	again, err := proc.Reserve(port)
	if err != nil {
		t.Fatalf("Reserve(%d) after release: %v", port, err)
	}
	again()
}
