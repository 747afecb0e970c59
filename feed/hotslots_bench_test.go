package feed_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// BenchmarkHotGamesLatency times XADD → handler for hot games spread over
// many hash slots, on a single node (the baseline) and on a 3-master
// cluster, in the same run: 40 games, 400 events/s for 3s after 1s of
// warm-up. It reports p50 and p99 in ms, and the CPU this process (the
// consumer and the writer) and the Redis masters used over the timed 3s.
// Run it with -benchtime=1x.
func BenchmarkHotGamesLatency(b *testing.B) {
	b.Run("single", func(b *testing.B) {
		_, rdb := mustStart(b)
		hotLatency(b, rdb, 0)
	})
	b.Run("cluster", func(b *testing.B) {
		rc := redistest.MustStartCluster(b)
		hotLatency(b, rc.Client(b), 0)
	})
}

// BenchmarkManyHotGames is BenchmarkHotGamesLatency with 5,000 more games
// hot beside the 40 written to, against none, in the same run, on a single
// node and on a 3-master cluster: the loop's cost per turn must not follow
// the number of hot games (docs/benchmarks.md, "many hot games" and "two
// tiers of hot"). Compare the two p50s and CPUs of each backend. Run it
// with -benchtime=1x.
func BenchmarkManyHotGames(b *testing.B) {
	for _, extra := range []int{0, 5000} {
		b.Run(fmt.Sprintf("single/hot=%d", 40+extra), func(b *testing.B) {
			_, rdb := mustStart(b)
			hotLatency(b, rdb, extra)
		})
	}
	for _, extra := range []int{0, 5000} {
		b.Run(fmt.Sprintf("cluster/hot=%d", 40+extra), func(b *testing.B) {
			rc := redistest.MustStartCluster(b)
			hotLatency(b, rc.Client(b), extra)
		})
	}
}

// hotLatency times XADD → handler for 40 games at 400 events/s, with extra
// more games made hot (registered now, one entry each, handled) first.
func hotLatency(b *testing.B, rdb redis.UniversalClient, extra int) {
	ctx := context.Background()
	var mu sync.Mutex
	sent := map[string]time.Time{}
	var lat []time.Duration
	var handled atomic.Int64
	cfg := registryConfig(b, rdb, "bench")
	cfg.WakeEvery, cfg.ActiveWindow = 100*time.Millisecond, 10*time.Second // the defaults
	if extra > 0 {
		cfg.ActiveWindow = time.Minute // the extra games stay hot through the run
	}
	cfg.Block = time.Second
	// The claims and the census at their defaults, as a renderer runs
	// them, not at the tests' fractions of a second.
	cfg.MinIdle, cfg.ClaimEvery, cfg.CensusEvery = 0, 0, 0
	cfg.Handler = func(_ context.Context, m feed.Message) error {
		now := time.Now()
		handled.Add(1)
		mu.Lock()
		if t, ok := sent[m.ID]; ok {
			lat = append(lat, now.Sub(t))
		}
		mu.Unlock()
		return nil
	}
	if extra > 0 {
		var others []string
		for i := range extra {
			others = append(others, fmt.Sprintf("other-%05d", i))
		}
		registerAt(b, rdb, others, time.Now())
	}
	mustOpen(b, cfg)
	waitFor(b, time.Minute, "the extra games' entries handled", func() bool { return handled.Load() >= int64(extra) })
	const games, rate = 40, 400
	write := func(i int, measure bool) {
		g := fmt.Sprintf("hot-%d", i%games)
		id := minter.Next(time.Now())
		if measure {
			mu.Lock()
			sent[id] = time.Now()
			mu.Unlock()
		}
		_ = rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream(g), Values: []any{"id", id, "kind", "chat",
			"at", time.Now().UTC().Format(time.RFC3339), "player", "ana", "text", "hi"}}).Err()
		_ = rdb.ZAddGT(ctx, event.RegistryKey, redisZ(g)).Err()
	}
	var self0, redis0 time.Duration
	for b.Loop() {
		tick := time.NewTicker(time.Second / rate)
		start := time.Now()
		warm := true
		for i := 0; time.Since(start) < 4*time.Second; i++ {
			<-tick.C
			if warm && time.Since(start) > time.Second {
				warm, self0, redis0 = false, selfCPU(b), redisCPU(b, rdb)
			}
			write(i, !warm)
		}
		tick.Stop()
	}
	b.ReportMetric(float64((selfCPU(b) - self0).Milliseconds()), "self-cpu-ms")
	b.ReportMetric(float64((redisCPU(b, rdb) - redis0).Milliseconds()), "redis-cpu-ms")
	waitFor(b, 20*time.Second, "every timed entry handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(lat) == len(sent)
	})
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

func selfCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU sums used_cpu_user and used_cpu_sys of INFO cpu over the
// masters (the one server of a plain client).
func redisCPU(tb testing.TB, rdb redis.UniversalClient) time.Duration {
	ctx := context.Background()
	var mu sync.Mutex
	var total float64
	one := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "cpu").Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
				f, _ := strconv.ParseFloat(v, 64)
				mu.Lock()
				total += f
				mu.Unlock()
			}
		}
		return nil
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, one)
	case *redis.Client:
		err = one(ctx, c)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return time.Duration(total * float64(time.Second))
}
