package feed_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// addRetry appends an entry, retrying while Redis is away; it returns the
// EVT id once the server acknowledged the write.
func addRetry(rdb *redis.Client, s string, stop <-chan struct{}) (string, bool) {
	id := minter.Next(time.Now())
	for {
		err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: s, Values: []any{"id", id, "kind", "chat", "player", "p", "text", "t"}}).Err()
		if err == nil {
			return id, true
		}
		select {
		case <-stop:
			return "", false
		case <-time.After(20 * time.Millisecond): // writer's retry period
		}
	}
}

// TestRedisRestartWithoutPersistence is proof 5 (no persistence): the group
// is gone after the restart; it is re-created and consumption resumes.
func TestRedisRestartWithoutPersistence(t *testing.T) {
	srv, rdb := mustStart(t)
	s := stream("volatile")
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = rec.handler
	logs := captureLogs(t, &cfg)
	c := mustOpen(t, cfg)
	before := add(t, rdb, s)
	waitFor(t, 5*time.Second, "first entry", func() bool { return rec.count(before) == 1 })

	srv.Restart(t)
	var after []string
	for range 5 {
		id, _ := addRetry(rdb, s, nil)
		after = append(after, id)
	}
	waitFor(t, 10*time.Second, "entries after the restart", func() bool {
		for _, id := range after {
			if rec.count(id) != 1 {
				return false
			}
		}
		return true
	})
	if st := c.Stats(); st.GroupsRecreated != 1 {
		t.Errorf("stats %+v: want the group re-created once", st)
	}
	if n := logs.count("NOGROUP"); n != 1 {
		t.Errorf("%d log lines mention NOGROUP, want one", n)
	}
	waitFor(t, 5*time.Second, "lease re-taken", func() bool {
		n, _ := rdb.Exists(context.Background(), event.LeaseKey(group, "r1")).Result()
		return n == 1
	})
	if err := c.Ready(); err != nil {
		t.Errorf("Ready = %v", err)
	}
}

// TestRedisRestartWithAOF is proof 5 (AOF): Redis is SIGKILLed and
// restarted mid-run while a writer writes; every entry the server
// acknowledged is handled, and nothing is left pending.
func TestRedisRestartWithAOF(t *testing.T) {
	srv, rdb := mustStart(t, redistest.Options{AOF: true})
	s := stream("durable")
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = rec.handler
	mustOpen(t, cfg)

	var mu sync.Mutex
	var written []string
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for range 200 {
			id, ok := addRetry(rdb, s, stop)
			if !ok {
				return
			}
			mu.Lock()
			written = append(written, id)
			mu.Unlock()
		}
	}()
	n := func() int { mu.Lock(); defer mu.Unlock(); return len(written) }
	waitFor(t, 10*time.Second, "writer under way", func() bool { return n() >= 50 })
	srv.Restart(t)
	t.Logf("restarted Redis after %d of 200 writes", n())
	select {
	case <-writerDone:
	case <-time.After(20 * time.Second):
		close(stop)
		t.Fatal("writer did not finish")
	}
	waitFor(t, 10*time.Second, "every acknowledged entry handled", func() bool {
		got := rec.ids()
		for _, id := range written {
			if got[id] == 0 {
				return false
			}
		}
		return true
	})
	waitFor(t, 5*time.Second, "nothing pending", func() bool { return pending(t, rdb, s) == 0 })
}

// TestRedisUnreachable: the consumer reports not ready while Redis is down,
// never exits, and resumes when Redis is back.
func TestRedisUnreachable(t *testing.T) {
	srv, rdb := mustStart(t, redistest.Options{AOF: true})
	s := stream("down")
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	waitFor(t, 5*time.Second, "ready", func() bool { return c.Ready() == nil })

	srv.Kill(t)
	waitFor(t, 10*time.Second, "not ready", func() bool { return c.Ready() != nil })
	if err := c.Ready(); !errors.Is(err, feed.ErrNotReady) {
		t.Errorf("Ready = %v", err)
	}
	t.Logf("while down: %v", c.Ready())
	srv.Start(t)
	waitFor(t, 10*time.Second, "ready again", func() bool { return c.Ready() == nil })
	id := add(t, rdb, s)
	waitFor(t, 5*time.Second, "consumption resumed", func() bool { return rec.count(id) == 1 })

	// Silent rather than gone: connections stay open, nothing answers.
	srv.Pause(t)
	waitFor(t, 15*time.Second, "not ready while paused", func() bool { return c.Ready() != nil })
	t.Logf("while paused: %v", c.Ready())
	srv.Resume(t)
	waitFor(t, 15*time.Second, "ready after resume", func() bool { return c.Ready() == nil })
	id = add(t, rdb, s)
	waitFor(t, 5*time.Second, "consumption resumed after pause", func() bool { return rec.count(id) == 1 })
	if st := c.Stats(); st.LoopErrors == 0 {
		t.Errorf("stats %+v: no loop error counted", st)
	}
}
