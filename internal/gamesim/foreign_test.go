package gamesim_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// gateProxy forwards TCP to Redis but holds the first client chunk that
// carries an XADD until released.
type gateProxy struct {
	ln      net.Listener
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func startGateProxy(tb testing.TB, target string) *gateProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &gateProxy{ln: ln, held: make(chan struct{}), release: make(chan struct{})}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			go func() { io.Copy(client, server); client.Close() }()
			go func() {
				defer server.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := client.Read(buf)
					if n > 0 {
						if bytes.Contains(bytes.ToLower(buf[:n]), []byte("xadd")) {
							first := false
							p.once.Do(func() { first = true })
							if first {
								close(p.held)
								<-p.release
							}
						}
						if _, werr := server.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// TestForeignAppendNotCountedAsWritten: an operator requeues a dead letter
// of a game while its writer's batch is on its way: the requeue's XADD *
// takes a position at or above the writer's own, the writer's XADD is
// refused "equal or smaller", and the writer counts as written entries that
// are not in the stream.
func TestForeignAppendNotCountedAsWritten(t *testing.T) {
	s := redistest.MustStart(t)
	direct := s.Client(t)
	ctx := context.Background()
	proxy := startGateProxy(t, s.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.ln.Addr().String()})
	t.Cleanup(func() { rdb.Close() })

	// A dead letter of game-1, fixed and ready to go back.
	ev := gamesim.Play("game-1", 99, 1)[0]
	vals := []any{}
	for _, v := range ev.Entry(event.NewMinter(99).Next(time.Now()), time.Now()) {
		vals = append(vals, v)
	}
	vals = append(vals, "dead_reason", "poison: x")
	dk := event.DeadKey("game-1")
	did, err := direct.XAdd(ctx, &redis.XAddArgs{Stream: dk, Values: vals}).Result()
	if err != nil {
		t.Fatal(err)
	}

	cfg := gamesim.Config{Games: 1, Events: 5, Seed: 1}
	type result struct {
		sum gamesim.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := gamesim.Run(ctx, rdb, cfg, io.Discard)
		done <- result{sum, err}
	}()
	select {
	case <-proxy.held:
	case <-time.After(20 * time.Second):
		t.Fatal("the writer sent no XADD")
	}
	if _, err := feed.RequeueDead(ctx, direct, event.StreamKey("game-1"), dk, did); err != nil {
		t.Fatal(err)
	}
	close(proxy.release)
	var res result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not finish")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	xs, err := direct.XRange(ctx, event.StreamKey("game-1"), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	ours := 0
	for _, x := range xs {
		if x.Values[event.FieldID] != vals[1] {
			ours++
		}
	}
	if int64(ours) != res.sum.Written() {
		t.Fatalf("summary says %d written, the stream holds %d of the writer's entries (of %d)", res.sum.Written(), ours, len(xs))
	}
}
