package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/proc"
	"github.com/codemojex/feed/internal/redisconn"
)

// ClusterConfig sizes the cluster benchmark.
type ClusterConfig struct {
	Dir      string
	Renderer string // renderer binary
	Games    int    // games pre-filled (10,000)
	Events   int    // events per game
	// The latency part: Rate events/s over LatGames further games, watched
	// by Clients websocket clients, for Warmup + Duration.
	Rate             float64
	LatGames         int
	Clients          int
	Warmup, Duration time.Duration
	Log              io.Writer
}

// BackendResult is what one Redis deployment measured.
type BackendResult struct {
	Name     string
	Events   int
	Drain    time.Duration // renderer start → every entry acked
	Rate     float64       // Events / Drain
	Q        Quantiles     // XADD → websocket frame
	Sent     int
	Expected int
	Audit    Audit // the clients' line frames against the delivery contract
}

// ClusterResult compares a 3-master Redis Cluster with a single node,
// measured in the same run.
type ClusterResult struct {
	Cfg             ClusterConfig
	Single, Cluster BackendResult
}

// Cluster runs the same work against a single redis-server and then a
// 3-master Redis Cluster: gamesim pre-fills Games × Events; one renderer
// process (-redis in go-redis's cluster URL form for the cluster) drains
// them, timed from its start; then, with those games still registered,
// paced lines at Rate over LatGames more games are timed from XADD to the
// websocket frame of every client that watches their game.
func Cluster(ctx context.Context, cfg ClusterConfig) (ClusterResult, error) {
	res := ClusterResult{Cfg: cfg}
	single, err := StartRedis(mkdir(cfg.Dir, "redis-cluster-single"))
	if err != nil {
		return res, err
	}
	res.Single, err = runBackend(ctx, cfg, "single", single.URL())
	single.Close()
	if err != nil {
		return res, fmt.Errorf("single node: %w", err)
	}
	cl, err := proc.StartCluster(ctx, mkdir(cfg.Dir, "redis-cluster"), proc.ClusterOptions{Node: proc.RedisOptions{MaxClients: 20000}})
	if cl != nil {
		defer cl.Close()
	}
	if err != nil {
		return res, err
	}
	res.Cluster, err = runBackend(ctx, cfg, "cluster", cl.URL())
	if err != nil {
		return res, fmt.Errorf("cluster: %w", err)
	}
	return res, nil
}

// runBackend measures drain rate and latency against the Redis at url.
func runBackend(ctx context.Context, cfg ClusterConfig, name, url string) (BackendResult, error) {
	br := BackendResult{Name: name}
	rdb, err := redisconn.Open(url)
	if err != nil {
		return br, err
	}
	defer rdb.Close()
	start := time.Now()
	sum, err := gamesim.Run(ctx, rdb, gamesim.Config{Games: cfg.Games, Events: cfg.Events, Seed: 1, Prefix: "cl"}, nil)
	if err != nil {
		return br, fmt.Errorf("bench: prefill: %w", err)
	}
	br.Events = int(sum.Written())
	keys := make([]string, 0, len(sum.Games))
	for _, g := range sum.Games {
		keys = append(keys, g.Stream)
	}
	fmt.Fprintf(cfg.Log, "cluster: %s: pre-filled %d events over %d games in %v\n", name, br.Events, len(keys), time.Since(start).Round(time.Millisecond))

	db := filepath.Join(cfg.Dir, "cluster-"+name+".db")
	probe := newStoreProbe(db)
	defer probe.Close()
	start = time.Now()
	rend, err := StartRenderer(cfg.Renderer, RendererArgs{RedisURL: url, DB: db,
		Consumer: name + "-1", LogDir: cfg.Dir})
	if err != nil {
		return br, err
	}
	defer rend.Stop()
	// Timed until the store holds every line, looked at from outside (as
	// the many-games drain is): a look at Redis costs one XINFO GROUPS per
	// game, on the server the drain reads from.
	if br.Drain, err = probe.waitStored(ctx, rend, start, int64(br.Events), 5*time.Minute, cfg.Dir); err != nil {
		return br, fmt.Errorf("%s: %w", name, err)
	}
	// Then, untimed, that the group has every entry acked.
	if err := pollEvery(ctx, time.Minute, 100*time.Millisecond, "every pre-filled entry acked", func() (bool, error) {
		return Drained(ctx, rdb, "feed", keys)
	}); err != nil {
		return br, err
	}
	br.Rate = float64(br.Events) / br.Drain.Seconds()
	fmt.Fprintf(cfg.Log, "cluster: %s: renderer drained %d events in %v: %.0f events/s\n", name, br.Events, br.Drain.Round(time.Millisecond), br.Rate)
	return br, latencyOn(ctx, cfg, rdb, rend, &br)
}

// latencyOn times paced lines from XADD to the websocket frames of
// cfg.Clients clients of rend, over cfg.LatGames new games.
func latencyOn(ctx context.Context, cfg ClusterConfig, rdb redis.UniversalClient, rend *Renderer, br *BackendResult) error {
	m := event.NewMinter(time.Now().UnixNano())
	games, err := SeedGames(ctx, rdb, m, "cll", cfg.LatGames)
	if err != nil {
		return err
	}
	keys := Keys(games)
	if err := pollEvery(ctx, 30*time.Second, 20*time.Millisecond, "latency games' seed consumed", func() (bool, error) {
		return Drained(ctx, rdb, "feed", keys)
	}); err != nil {
		return err
	}
	sw, err := Connect(ctx, SwarmConfig{BaseURL: rend.URL(), Games: games, N: cfg.Clients})
	if err != nil {
		return err
	}
	defer sw.Close()
	w := NewWriter(rdb, m, games)
	if _, err := w.Paced(ctx, cfg.Rate, cfg.Warmup); err != nil {
		return err
	}
	w.Reset()
	if br.Sent, err = w.Paced(ctx, cfg.Rate, cfg.Duration); err != nil {
		return err
	}
	br.Expected, _ = awaitDelivered(ctx, w, sw, clientsPerGame(len(games), cfg.Clients), "every line delivered")
	ds := sw.Deliveries()
	lat, _ := Latencies(w, ds)
	br.Q = Summarize(lat)
	br.Audit = auditDeliveries(w, cfg.Clients, sw.Lost(), ds)
	fmt.Fprintf(cfg.Log, "cluster: %s: %d lines, %d of %d deliveries: %s; the delivery contract: %s\n", br.Name, br.Sent, br.Q.N, br.Expected, br.Q, br.Audit)
	return nil
}

// pollEvery is proc.Poll with its own interval, for conditions that are
// costly to look at.
func pollEvery(ctx context.Context, timeout, every time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %v: %s", proc.ErrTimeout, timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// Rows are the table's cluster figures.
func (r ClusterResult) Rows() []Row {
	c, s, k := r.Cfg, r.Single, r.Cluster
	ratio := k.Rate / s.Rate
	ok := k.Q.P99 <= 25*time.Millisecond && k.Q.N == k.Expected
	return []Row{
		{Bench: "cluster", Metric: fmt.Sprintf("one renderer process drains %d games × %d events (gamesim, pre-filled), timed from its start: single node / 3-master cluster", c.Games, c.Events),
			Value: fmt.Sprintf("%.0f / %.0f events/s", s.Rate, k.Rate)},
		{Bench: "cluster", Metric: "cluster / single-node drain rate, same run",
			Value: fmt.Sprintf("%.0f%%", 100*ratio)},
		{Bench: "cluster", Metric: fmt.Sprintf("XADD → websocket frame on the 3-master cluster, %.0f events/s over %d more games (the %d drained ones still registered), %d clients, %v",
			c.Rate, c.LatGames, c.Games, c.Clients, c.Duration),
			Value:  fmt.Sprintf("p50 %s · p99 %s · max %s", ms(k.Q.P50), ms(k.Q.P99), ms(k.Q.Max)),
			Target: "p99 ≤ 25 ms", Met: verdict(ok)},
		{Bench: "cluster", Metric: "the same on the single node (baseline)",
			Value: fmt.Sprintf("p50 %s · p99 %s · max %s", ms(s.Q.P50), ms(s.Q.P99), ms(s.Q.Max))},
		{Bench: "cluster", Metric: "deliveries received / expected: cluster; single node",
			Value: fmt.Sprintf("%d / %d; %d / %d", k.Q.N, k.Expected, s.Q.N, s.Expected)},
		auditRow("cluster", "the cluster's and the single node's rounds", k.Audit.plus(s.Audit)),
	}
}
