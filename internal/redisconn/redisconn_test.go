package redisconn_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/redisconn"
)

func TestOpen(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		wantErr bool
	}{
		{"redis scheme", "redis://127.0.0.1:1/0", false},
		{"unix socket", "unix:///tmp/redis.sock", false},
		{"no scheme", "127.0.0.1:6379", true},
		{"bad scheme", "http://127.0.0.1:6379", true},
		{"bad db", "redis://127.0.0.1:1/x", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rdb, err := redisconn.Open(tt.url)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Open(%q) error = %v, want error %v", tt.url, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			defer rdb.Close()
			c, ok := rdb.(*redis.Client)
			if !ok {
				t.Fatalf("Open(%q) = %T, want *redis.Client", tt.url, rdb)
			}
			if !c.Options().ContextTimeoutEnabled {
				t.Errorf("Open(%q): ContextTimeoutEnabled = false, want true", tt.url)
			}
		})
	}
}

// TestOpenHonoursDeadline checks that a call to a server that accepts the
// connection and never answers (a hung Redis) ends at the context's
// deadline, well before go-redis's own read timeout and retries.
func TestOpenHonoursDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn // held open, never answered
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	rdb, err := redisconn.Open("redis://" + ln.Addr().String() + "/0")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = rdb.Ping(ctx).Err()
	took := time.Since(start)
	if err == nil {
		t.Fatal("PING to a silent server returned no error")
	}
	if ctx.Err() == nil {
		t.Fatalf("PING ended before its deadline: %v", err)
	}
	// Without ContextTimeoutEnabled the call would wait for go-redis's
	// read timeout (and retry); with it the deadline ends it.
	const readTimeout = 3 * time.Second // go-redis's default
	if took >= readTimeout {
		t.Errorf("PING took %v, not ended by its 100ms deadline", took)
	}
}
