package feed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// A poison verdict met while Redis refuses writes (maxmemory reached under
// noeviction: the dead letter's XADD is refused with OOM) leaves the entry
// pending, never acked without its letter, and the loop neither stalls nor
// spins; once memory is freed the entry is dead-lettered once.
func TestPoisonWhileOutOfMemoryStaysPending(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("oom"), event.DeadKey("oom")
	gate := make(chan struct{})
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.Payload["verdict"] == "poison" {
			<-gate
			return feed.Poison(errors.New("bad entry"))
		}
		return rec.handler(ctx, m)
	}
	c := mustOpen(t, cfg)
	bad := add(t, rdb, s, "verdict", "poison")
	waitFor(t, 5*time.Second, "the poison entry in hand", func() bool { return groupPending(rdb, s) == 1 })
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.ConfigSet(context.Background(), "maxmemory", "0") })
	close(gate)
	waitFor(t, 5*time.Second, "the dead letter refused", func() bool { return c.Stats().LoopErrors > 0 })
	before := commandCalls(t, rdb)
	// Three claim periods under OOM: the entry comes back and is refused
	// again, at the pace of MinIdle.
	deadline := time.Now().Add(3 * cfg.MinIdle)
	waitFor(t, 10*time.Second, "three MinIdle periods", func() bool { return time.Now().After(deadline) })
	after := commandCalls(t, rdb)
	if n := pending(t, rdb, s); n != 1 {
		t.Fatalf("pending = %d under OOM, want the poison entry still pending", n)
	}
	if n, _ := rdb.XLen(ctx, dk).Result(); n != 0 {
		t.Fatalf("dead stream has %d letters under OOM", n)
	}
	if evals := after["eval"] - before["eval"]; evals > 10 {
		t.Errorf("%d dead-letter scripts in 3×MinIdle: spinning", evals)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "dead-lettered once memory is freed", func() bool {
		n, _ := rdb.XLen(ctx, dk).Result()
		return n == 1 && pending(t, rdb, s) == 0
	})
	dead, _ := feed.ListDead(ctx, rdb, dk, 0)
	if len(dead) != 1 || dead[0].EvtID != bad {
		t.Errorf("dead letters %+v", dead)
	}
	ok := add(t, rdb, s)
	waitFor(t, 5*time.Second, "a good entry after it", func() bool { return rec.count(ok) == 1 })
}

// A master that refuses writes for a while (min-replicas-to-write not met:
// NOREPLICAS on XACK, XREADGROUP, XAUTOCLAIM, XGROUP CREATE) is Redis
// unable to serve now, not a fault of the stream: the ack refused is kept
// and sent once writes are accepted again, so the entry is handled once
// and not claimed back; the group door is not blamed (no "consumer group
// cannot be created" error, no group error counted, no door backoff); and
// reading goes on once the replica is back.
func TestWritesRefusedByMasterKeepAcks(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("norep")
	gate := make(chan struct{})
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	logs := captureLogs(t, &cfg)
	var first atomic.Bool
	first.Store(true)
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if first.Swap(false) {
			<-gate
		}
		return rec.handler(ctx, m)
	}
	c := mustOpen(t, cfg)
	a := add(t, rdb, s)
	waitFor(t, 5*time.Second, "the entry in hand", func() bool { return groupPending(rdb, s) == 1 })
	// The master's replica is gone: every write is refused from now on.
	if err := rdb.ConfigSet(ctx, "min-replicas-to-write", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.ConfigSet(context.Background(), "min-replicas-to-write", "0") })
	close(gate)
	waitFor(t, 10*time.Second, "writes refused for a while", func() bool { return refusals(t, rdb, "NOREPLICAS") >= 25 })
	if err := rdb.ConfigSet(ctx, "min-replicas-to-write", "0").Err(); err != nil {
		t.Fatal(err)
	}
	b := add(t, rdb, s)
	waitFor(t, 10*time.Second, "the next entry handled", func() bool { return rec.count(b) == 1 })
	waitFor(t, 5*time.Second, "nothing pending", func() bool { return pending(t, rdb, s) == 0 })
	if n := rec.count(a); n != 1 {
		t.Errorf("the entry whose ack was refused was handled %d times, want once (its ack dropped, it was claimed back)", n)
	}
	st := c.Stats()
	if st.Claimed != 0 || st.GroupErrors != 0 {
		t.Errorf("claimed %d, group errors %d: want 0, 0", st.Claimed, st.GroupErrors)
	}
	if n := logs.count("consumer group cannot be created"); n != 0 {
		t.Errorf("%d group door errors logged for writes refused by the master", n)
	}
}

// groupPending is the group's pending count on stream, -1 while the group
// is not there yet.
func groupPending(rdb redis.UniversalClient, stream string) int64 {
	p, err := rdb.XPending(context.Background(), stream, group).Result()
	if err != nil {
		return -1
	}
	return p.Count
}

// refusals returns how many replies of the error code Redis has sent
// (INFO errorstats).
func refusals(tb testing.TB, rdb redis.UniversalClient, code string) int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "errorstats").Result()
	if err != nil {
		tb.Fatalf("info errorstats: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		var n int64
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "errorstat_"+code+":count=%d", &n); err == nil {
			return n
		}
	}
	return 0
}

// A renderer started while Redis is at maxmemory under noeviction reads
// the backlog of the groups that exist: XREADGROUP and XACK are not
// refused there, only commands that need memory (SET, XADD, XGROUP
// CREATE, even for a group that exists). It takes its lease and goes
// through the group door all the same, and no door error is reported.
func TestOutOfMemoryAtStartReadsBacklog(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("oomstart")
	if err := rdb.XGroupCreateMkStream(ctx, s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	a, b := add(t, rdb, s), add(t, rdb, s)
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.ConfigSet(context.Background(), "maxmemory", "0") })
	if err := rdb.Set(ctx, "probe", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("SET at maxmemory = %v, want OOM", err)
	}
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = rec.handler
	logs := captureLogs(t, &cfg)
	c := mustOpen(t, cfg)
	waitFor(t, 5*time.Second, "the backlog handled and acked at maxmemory", func() bool {
		return rec.count(a) == 1 && rec.count(b) == 1 && pending(t, rdb, s) == 0
	})
	if err := c.Ready(); err != nil {
		t.Errorf("Ready = %v", err)
	}
	if n := logs.count("consumer group cannot be created"); n != 0 || c.Stats().GroupErrors != 0 {
		t.Errorf("%d door errors logged, %d counted, for a group that exists", n, c.Stats().GroupErrors)
	}
	if n := logs.count("redis unreachable at open"); n != 0 {
		t.Errorf("lease not taken at open")
	}
}
