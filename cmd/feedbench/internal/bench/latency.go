package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/proc"
)

// LatencyConfig sizes the latency benchmark.
type LatencyConfig struct {
	Dir      string
	Renderer string // renderer binary
	Games    int
	Clients  int
	Rate     float64 // events/s over all games
	Warmup   time.Duration
	Duration time.Duration // measured writing time of each server, over all its rounds
	// Rounds is how many measured rounds each server gets (0 means 1),
	// each of Duration/Rounds, run renderer, broadcaster, broadcaster,
	// renderer, and so on (ABBA order): on a shared machine the load
	// moves during a run, and a single window of each server, one after
	// the other, let that move decide the p99 ratio. Interleaved, a drift
	// weighs on both sides alike. Figures pool the rounds' deliveries.
	Rounds int
	Log    io.Writer
	// CPUProfile, when set, is written for the measured window (useful
	// with an in-process renderer: Renderer "").
	CPUProfile string
	// Dump, when set, receives one CSV line per delivery: send time since
	// the measured window began and latency, in µs.
	Dump string
	// Self is this program, run as "SELF broadcaster" for the baseline
	// ("" skips the baseline).
	Self string
	// Compressed adds, after the rounds, one renderer round of
	// Duration/Rounds whose clients all offer permessage-deflate, as
	// browsers do. Its figures stand apart: the targets compare the plain
	// rounds with the baseline, whose clients take plain frames.
	Compressed bool
	// Prefill is how many lines the renderer stores before the rounds, in
	// as many other games as Games that no client watches: the rounds then
	// run against a grown store, as a deployed renderer's is, while the
	// watched games start as they would without it.
	Prefill int
}

// LatencyResult is XADD → websocket frame latency over every delivery,
// the renderer's and the bare broadcaster's.
type LatencyResult struct {
	Cfg LatencyConfig
	latencyPhase
	// Base is the bare broadcaster's run (nil without Cfg.Self).
	Base *latencyPhase
	// Compressed is the round of compressing clients (nil without
	// Cfg.Compressed).
	Compressed *latencyPhase
	InProcess  bool
}

// Latency runs one real renderer process, connects Clients websocket
// clients from this process (spread over Games), writes events at Rate for
// Warmup + Duration (Warmup + Duration/Rounds a round) and measures, for every line every client receives in
// the measured window, the time from just before its XADD to the frame's
// arrival. Then, in the same run, it does the same with the bare
// broadcaster (Broadcaster, when Self is set): the same clients, the same
// frames, pre-rendered and PUBLISHed. With Rounds, the two take turns
// (ABBA), and each server's figures pool its rounds.
func Latency(ctx context.Context, cfg LatencyConfig) (LatencyResult, error) {
	res := LatencyResult{Cfg: cfg}
	st, err := openStage(ctx, cfg.Renderer, cfg.Dir, "latency", "lat", cfg.Games)
	if err != nil {
		return res, err
	}
	defer st.Close()
	res.InProcess = cfg.Renderer == ""
	if err := growStore(ctx, cfg, st); err != nil {
		return res, err
	}
	var b *BroadcasterProc
	if cfg.Self != "" {
		if b, err = StartBroadcaster(ctx, cfg.Self, st.redis.URL(), cfg.Log); err != nil {
			return res, err
		}
		defer b.Stop()
		res.Base = &latencyPhase{}
	}
	round := cfg
	round.Duration = cfg.Duration / time.Duration(max(cfg.Rounds, 1))
	first := true
	for _, renderer := range roundOrder(cfg.Rounds, b != nil) {
		if renderer {
			// The profile and the dump cover the first round only.
			prof, dump := "", ""
			if first {
				prof, dump, first = cfg.CPUProfile, cfg.Dump, false
			}
			p, err := latencyRun(ctx, round, st, st.rend, NewWriter(st.rdb, st.mint, st.games), prof, dump, false)
			if err != nil {
				return res, err
			}
			res.latencyPhase.add(p)
			continue
		}
		p, err := latencyRun(ctx, round, st, b, NewPublisher(st.rdb, st.mint, st.games), "", "", false)
		if err != nil {
			return res, fmt.Errorf("baseline: %w", err)
		}
		res.Base.add(p)
	}
	if cfg.Compressed {
		p, err := latencyRun(ctx, round, st, st.rend, NewWriter(st.rdb, st.mint, st.games), "", "", true)
		if err != nil {
			return res, fmt.Errorf("compressing clients: %w", err)
		}
		res.Compressed = &latencyPhase{}
		res.Compressed.add(p)
	}
	return res, nil
}

// prefillRate is how fast growStore writes: well under what the renderer
// stores a second on a small host, so that it catches up as it goes.
const prefillRate = 5000

// growStore has the renderer store cfg.Prefill lines in other games and
// waits until it has taken them all. A renderer process then forgets them
// everywhere but in its store: their streams and registry entries are
// deleted and it starts again, so that the rounds read the same streams
// as without a prefill and a fresh process serves them. An in-process
// renderer keeps reading the (idle) streams of those games.
func growStore(ctx context.Context, cfg LatencyConfig, st *stage) error {
	if cfg.Prefill <= 0 {
		return nil
	}
	start := time.Now()
	games, err := SeedGames(ctx, st.rdb, st.mint, "latfill", cfg.Games)
	if err != nil {
		return fmt.Errorf("prefill: %w", err)
	}
	w := NewWriter(st.rdb, st.mint, games)
	d := time.Duration(float64(cfg.Prefill) / prefillRate * float64(time.Second))
	if _, err := w.Paced(ctx, prefillRate, d); err != nil {
		return fmt.Errorf("prefill: %w", err)
	}
	keys := Keys(games)
	if err := st.waitConsumed(ctx, keys, 5*time.Minute, "prefill consumed"); err != nil {
		return fmt.Errorf("prefill: %w", err)
	}
	if r, ok := st.rend.(*Renderer); ok {
		pipe := st.rdb.Pipeline()
		pipe.Del(ctx, keys...)
		for _, g := range games {
			pipe.ZRem(ctx, event.RegistryKey, g)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("prefill: forget the games: %w", err)
		}
		r.Kill()
		if err := r.Start(); err != nil {
			return fmt.Errorf("prefill: %w", err)
		}
		if err := r.WaitReady(ctx, 30*time.Second); err != nil {
			return fmt.Errorf("prefill: %w", err)
		}
	}
	fmt.Fprintf(cfg.Log, "latency: prefilled %d lines in %d unwatched games in %v\n", cfg.Prefill, cfg.Games, time.Since(start).Round(time.Millisecond))
	return nil
}

// roundOrder is the order of the latency benchmark's rounds, true for the
// renderer's: R B B R R B …, or only the renderer's without a baseline.
func roundOrder(rounds int, baseline bool) []bool {
	rounds = max(rounds, 1)
	var order []bool
	for i := range rounds {
		if !baseline {
			order = append(order, true)
			continue
		}
		order = append(order, i%2 == 0, i%2 == 1)
	}
	return order
}

// latencyPhase is one server's figures in the latency benchmark.
type latencyPhase struct {
	Q          Quantiles
	Sent       int
	Expected   int // deliveries expected: each line times the clients of its game
	Dropped    int
	AchievedHz float64
	// Frames is the websocket frames the clients received over the
	// measured window; FramesPerLine divides it by the line deliveries.
	Frames        int64
	FramesPerLine float64
	// BytesPerLine is the frames' payload bytes per line delivery.
	BytesPerLine float64
	// WindowP99 is the p99 of each second of the measured window (by send
	// time), sorted: a shared machine's busy spells show as a few bad
	// seconds rather than a higher p99 everywhere.
	WindowP99 []time.Duration
	// ServerCPU is the CPU the server process used over the measured
	// window (this whole process when the renderer is in-process).
	ServerCPU time.Duration
	// CPU used over the measured window, in cores: the server (this
	// process when in-process), this process (clients and writer), Redis.
	RendererCores, BenchCores, RedisCores float64
	// Handoff is the renderer's handoffMetric over the measured window,
	// Reads its readMetric and Commits its commitMetric (all empty for
	// the broadcaster).
	Handoff, Reads, Commits histogram
	// Garbage is the renderer's heap allocation and GC cycles over the
	// window (zero for the broadcaster, and for an in-process renderer,
	// whose heap is shared with the clients).
	Garbage garbage
	// RoundP99 is the p99 of each round, in the order run.
	RoundP99 []time.Duration

	lat   []time.Duration // every delivery's latency
	bytes int64           // payload bytes of the frames received
	wire  int64           // bytes read off the clients' connections
	wall  float64         // seconds written in the measured windows
}

// add pools the round o into p: counts and CPU add up, cores are averaged
// over the time written, and quantiles are taken again over every
// delivery.
func (p *latencyPhase) add(o latencyPhase) {
	if w := p.wall + o.wall; w > 0 {
		avg := func(a, b float64) float64 { return (a*p.wall + b*o.wall) / w }
		p.RendererCores, p.BenchCores, p.RedisCores = avg(p.RendererCores, o.RendererCores), avg(p.BenchCores, o.BenchCores), avg(p.RedisCores, o.RedisCores)
		p.AchievedHz = float64(p.Sent+o.Sent) / w
	}
	p.wall += o.wall
	p.Sent += o.Sent
	p.Expected += o.Expected
	p.Dropped += o.Dropped
	p.Frames += o.Frames
	p.bytes += o.bytes
	p.wire += o.wire
	p.ServerCPU += o.ServerCPU
	p.lat = append(p.lat, o.lat...)
	p.WindowP99 = append(p.WindowP99, o.WindowP99...)
	slices.Sort(p.WindowP99)
	p.RoundP99 = append(p.RoundP99, o.Q.P99)
	p.Handoff, p.Reads, p.Commits = p.Handoff.plus(o.Handoff), p.Reads.plus(o.Reads), p.Commits.plus(o.Commits)
	p.Garbage = p.Garbage.plus(o.Garbage)
	p.Q = Summarize(p.lat)
	if n := len(p.lat); n > 0 {
		p.FramesPerLine = float64(p.Frames) / float64(n)
		p.BytesPerLine = float64(p.bytes) / float64(n)
	}
}

// garbage is what the renderer reports on its /metrics page, between two
// scrapes: bytes allocated on the heap and GC cycles, and its store
// commits. GC cycles matter to the tail: their concurrent marking takes a
// quarter of the CPU while it runs, and on a busy machine the lines that
// arrive meanwhile queue (docs/benchmarks-journal.md, "Garbage and the tail").
// Commits say how well the linger shares a transaction between lines.
type garbage struct {
	Bytes, Cycles, Commits float64
}

var garbageMetrics = []string{"go_memstats_alloc_bytes_total", "go_gc_duration_seconds_count", "codemojex_store_upsert_batch_seconds_count"}

func scrapeGarbage(ctx context.Context, base string) (garbage, error) {
	vs, err := scrapeValues(ctx, base, garbageMetrics...)
	if err != nil {
		return garbage{}, err
	}
	return garbage{Bytes: vs[garbageMetrics[0]], Cycles: vs[garbageMetrics[1]], Commits: vs[garbageMetrics[2]]}, nil
}

// since is what the counters moved from an earlier scrape to g.
func (g garbage) since(before garbage) garbage {
	return garbage{Bytes: g.Bytes - before.Bytes, Cycles: g.Cycles - before.Cycles, Commits: g.Commits - before.Commits}
}

// plus is g and o counted together: two windows of the same counters.
func (g garbage) plus(o garbage) garbage {
	return garbage{Bytes: g.Bytes + o.Bytes, Cycles: g.Cycles + o.Cycles, Commits: g.Commits + o.Commits}
}

// handoffMetric is the renderer's histogram of the time from an event's
// "at" (set just before its XADD) to its line's hand-off to the hubs.
const handoffMetric = "codemojex_web_tail_lag_seconds"

// commitMetric is the renderer's histogram of its store commits' wall
// time: the part of the hand-off spent in SQLite.
const commitMetric = "codemojex_store_upsert_batch_seconds"

// readMetric is the renderer's histogram of the time from an entry's XADD
// (its stream id) to the read that delivered it: the part of the hand-off
// before the consumer has the line in hand.
const readMetric = "codemojex_feed_read_lag_seconds"

// latencyRun connects the clients to srv (offering permessage-deflate when
// compress), writes with w and measures.
func latencyRun(ctx context.Context, cfg LatencyConfig, st *stage, srv target, w *Writer, cpuProfile, dump string, compress bool) (latencyPhase, error) {
	var res latencyPhase
	start := time.Now()
	sw, err := Connect(ctx, SwarmConfig{BaseURL: srv.URL(), Games: st.games, N: cfg.Clients, Compress: compress})
	if err != nil {
		return res, err
	}
	defer sw.Close()
	fmt.Fprintf(cfg.Log, "latency: %d clients of %s connected over %d games in %v\n", cfg.Clients, srv.URL(), cfg.Games, time.Since(start).Round(time.Millisecond))

	if _, err := w.Paced(ctx, cfg.Rate, cfg.Warmup); err != nil {
		return res, err
	}
	perGame := make([]int, len(st.games))
	for i := range cfg.Clients {
		perGame[i%len(st.games)]++
	}
	// The window's counters start once every client has its warm-up's
	// lines: a connection sends in seq order, so the frames before them
	// (the state and the backfill each fresh client gets, which grows with
	// every round before) are then all read, and are not counted as the
	// window's. Without the wait, a busy host let them in: one CI run saw
	// the compressing round, whose backfill holds the plain round's lines,
	// read 0.81 of the plain round's wire bytes per line, against 0.41-0.53.
	warm := expectedDeliveries(w, perGame)
	if _, err := proc.Poll(ctx, 10*time.Second, "every warm-up line delivered", func() (bool, error) {
		lat, _ := Latencies(w, sw.Deliveries())
		return len(lat) >= warm, nil
	}); err != nil {
		fmt.Fprintf(cfg.Log, "latency: %v; the window's frame and byte counts may hold some of the warm-up's\n", err)
	}
	w.Reset()
	frames0, bytes0, wire0 := sw.Received()
	stopProfile, err := startCPUProfile(cpuProfile)
	if err != nil {
		return res, err
	}
	// The renderer's own view of the hand-off (the broadcaster has none):
	// whether the tail is before the websockets or in them.
	hand0, handErr := scrapeHistogram(ctx, srv.URL(), handoffMetric)
	commit0, commitErr := scrapeHistogram(ctx, srv.URL(), commitMetric)
	read0, readErr := scrapeHistogram(ctx, srv.URL(), readMetric)
	garb0, garbErr := scrapeGarbage(ctx, srv.URL())
	rend0, _ := ProcCPU(srv.Pid())
	self0, redis0 := SelfCPU(), mustCPU(st.redis.Pid())
	from := time.Now()
	sent, err := w.Paced(ctx, cfg.Rate, cfg.Duration)
	wall := time.Since(from).Seconds()
	rend1, _ := ProcCPU(srv.Pid())
	if garbErr == nil && cfg.Renderer != "" {
		if garb1, err := scrapeGarbage(ctx, srv.URL()); err == nil {
			res.Garbage = garb1.since(garb0)
		}
	}
	res.ServerCPU = rend1 - rend0
	res.RendererCores = res.ServerCPU.Seconds() / wall
	res.BenchCores = (SelfCPU() - self0).Seconds() / wall
	res.RedisCores = (mustCPU(st.redis.Pid()) - redis0).Seconds() / wall
	stopProfile()
	if err != nil {
		return res, err
	}
	res.Sent = sent
	res.AchievedHz = float64(sent) / wall
	res.Expected = expectedDeliveries(w, perGame)
	_, _ = proc.Poll(ctx, 10*time.Second, "every line delivered", func() (bool, error) {
		lat, _ := Latencies(w, sw.Deliveries())
		return len(lat) >= res.Expected, nil
	})
	if handErr == nil {
		if hand1, err := scrapeHistogram(ctx, srv.URL(), handoffMetric); err == nil {
			res.Handoff = hand1.since(hand0)
		}
	}
	if readErr == nil {
		if read1, err := scrapeHistogram(ctx, srv.URL(), readMetric); err == nil {
			res.Reads = read1.since(read0)
		}
	}
	if commitErr == nil {
		if commit1, err := scrapeHistogram(ctx, srv.URL(), commitMetric); err == nil {
			res.Commits = commit1.since(commit0)
		}
	}
	lat, _ := Latencies(w, sw.Deliveries())
	res.WindowP99 = windowP99(w, from, time.Second, sw.Deliveries())
	if dump != "" {
		dumpDeliveries(dump, w, from, sw.Deliveries())
	}
	frames1, bytes1, wire1 := sw.Received()
	res.Frames = frames1 - frames0
	res.bytes = bytes1 - bytes0
	res.wire = wire1 - wire0
	if len(lat) > 0 {
		res.FramesPerLine = float64(res.Frames) / float64(len(lat))
		res.BytesPerLine = float64(res.bytes) / float64(len(lat))
	}
	res.Q = Summarize(lat)
	res.lat, res.wall = lat, wall
	res.Dropped, _ = sw.Dropped()
	fmt.Fprintf(cfg.Log, "latency: %s: %d lines at %.0f/s, %d of %d deliveries, %.2f frames/line, %.0f B/line, %.2f cores: %s%s\n",
		srv.URL(), sent, res.AchievedHz, res.Q.N, res.Expected, res.FramesPerLine, res.BytesPerLine, res.RendererCores, res.Q, res.roundNote())
	return res, nil
}

// expectedDeliveries is the deliveries of what w sent since its last
// Reset, when game g has perGame[g] clients.
func expectedDeliveries(w *Writer, perGame []int) int {
	n := 0
	for g, sent := range w.SentGames() {
		n += sent * perGame[g]
	}
	return n
}

// cpuPerFrame is the server's CPU per frame delivered, in µs.
func (p latencyPhase) cpuPerFrame() float64 {
	if p.Frames == 0 {
		return 0
	}
	return float64(p.ServerCPU.Microseconds()) / float64(p.Frames)
}

// cpuPer1000 is the server's CPU-seconds per 1,000 line deliveries.
func (p latencyPhase) cpuPer1000() float64 {
	if p.Q.N == 0 {
		return 0
	}
	return p.ServerCPU.Seconds() / float64(p.Q.N) * 1000
}

// Rows are the table's latency figures.
func (r LatencyResult) Rows() []Row {
	c := r.Cfg
	ok := r.Q.P99 < 25*time.Millisecond && r.Q.N == r.Expected
	rows := []Row{
		{Bench: "latency", Metric: fmt.Sprintf("XADD → websocket frame, %.0f events/s (gamesim's mix of kinds) over %d games, %d clients, %s; %d lines in %v%s%s",
			c.Rate, c.Games, c.Clients, r.where(), r.Sent, c.Duration, r.roundsNote(), r.prefillNote()),
			Value:  fmt.Sprintf("p50 %s · p99 %s · max %s", ms(r.Q.P50), ms(r.Q.P99), ms(r.Q.Max)),
			Target: "p99 < 25 ms", Met: verdict(ok)},
		{Bench: "latency", Metric: fmt.Sprintf("p99 of each second of the run (%d seconds): best / median / worst", len(r.WindowP99)),
			Value: r.windows()},
		{Bench: "latency", Metric: "… of it, XADD → line handed to the hubs, as the renderer measures it (" + handoffMetric + " over the window; bucket upper bounds)",
			Value: quantiles(r.Handoff, "lines")},
		{Bench: "latency", Metric: "… of that, XADD → the consumer's read that delivered the entry (" + readMetric + " over the window; bucket upper bounds; the rest of the hand-off is prepare, commit and hand-off)",
			Value: quantiles(r.Reads, "entries")},
		{Bench: "latency", Metric: "… of that, a store commit's wall time (" + commitMetric + " over the window; bucket upper bounds)",
			Value: quantiles(r.Commits, "commits")},
		{Bench: "latency", Metric: "… the renderer's garbage over the window: heap allocated per line written; GC cycles (go_memstats_alloc_bytes_total, go_gc_duration_seconds_count)",
			Value: r.garbage()},
		{Bench: "latency", Metric: "… lines per store commit over the window (codemojex_store_upsert_batch_seconds_count; the linger gathers them)",
			Value: r.perCommit()},
		{Bench: "latency", Metric: "deliveries received / expected (clients dropped)",
			Value: fmt.Sprintf("%d / %d (%d dropped)", r.Q.N, r.Expected, r.Dropped)},
		{Bench: "latency", Metric: "websocket frames, their payload bytes, and the bytes read off the wire, received per line delivered (line + scoreboard state and board frames)",
			Value: fmt.Sprintf("%.2f; %.0f B; %.0f B", r.FramesPerLine, r.BytesPerLine, r.WirePerLine())},
		{Bench: "latency", Metric: "CPU while writing, in cores: renderer / feedbench (clients + writer) / redis-server",
			Value: r.cpuString()},
	}
	if r.Base == nil {
		return rows
	}
	b := r.Base
	rows = append(rows,
		Row{Bench: "latency", Metric: fmt.Sprintf("baseline: bare broadcaster (coder/websocket, frames pre-rendered, Redis PUBLISH → frame), same clients, rate and mix; %d lines", b.Sent),
			Value: fmt.Sprintf("p50 %s · p99 %s · max %s", ms(b.Q.P50), ms(b.Q.P99), ms(b.Q.Max))},
		Row{Bench: "latency", Metric: "baseline: deliveries received / expected (clients dropped); frames, payload bytes and wire bytes per line",
			Value: fmt.Sprintf("%d / %d (%d dropped); %.2f; %.0f B; %.0f B", b.Q.N, b.Expected, b.Dropped, b.FramesPerLine, b.BytesPerLine, b.WirePerLine())},
		Row{Bench: "latency", Metric: "baseline: CPU while writing, in cores: broadcaster / feedbench / redis-server",
			Value: fmt.Sprintf("%.2f / %.2f / %.2f", b.RendererCores, b.BenchCores, b.RedisCores)},
	)
	if r.InProcess {
		return rows // the renderer's CPU is not its own: no ratios
	}
	rows = append(rows, r.compressedRows()...)
	perFrame, basePerFrame := r.cpuPerFrame(), b.cpuPerFrame()
	p99ratio := ratio(float64(r.Q.P99), float64(b.Q.P99))
	if len(r.RoundP99) > 1 {
		rows = append(rows, Row{Bench: "latency", Metric: fmt.Sprintf("p99 of each round, renderer / baseline, in %d rounds each run R B B R …: their ratios", len(r.RoundP99)),
			Value: r.roundRatios()})
	}
	rows = append(rows,
		Row{Bench: "latency", Metric: "renderer CPU per delivered frame / baseline's (any frame: line or state)",
			Value:  fmt.Sprintf("%.1f / %.1f µs = %.2f×", perFrame, basePerFrame, ratio(perFrame, basePerFrame)),
			Target: "≤ 2×", Met: verdict(basePerFrame > 0 && perFrame <= 2*basePerFrame)},
		Row{Bench: "latency", Metric: "CPU-seconds per 1,000 line deliveries: renderer / baseline",
			Value: fmt.Sprintf("%.3f / %.3f s = %.2f×", r.cpuPer1000(), b.cpuPer1000(), ratio(r.cpuPer1000(), b.cpuPer1000()))},
		Row{Bench: "latency", Metric: "XADD → frame p99 / baseline's PUBLISH → frame p99" + r.pooledNote(),
			Value:  fmt.Sprintf("%s / %s = %.2f×", ms(r.Q.P99), ms(b.Q.P99), p99ratio),
			Target: "≤ 2× (baseline p99 the floor)", Met: verdict(b.Q.N > 0 && r.Q.P99 <= 2*b.Q.P99)},
	)
	return rows
}

// compressedRows are the figures of the round of compressing clients, set
// against the plain rounds' and the baseline's: what a browser's socket
// costs the renderer, and what it receives.
func (r LatencyResult) compressedRows() []Row {
	z := r.Compressed
	if z == nil || r.Base == nil {
		return nil
	}
	return []Row{
		{Bench: "latency", Metric: fmt.Sprintf("compressing clients (every client offers permessage-deflate, as browsers do), one renderer round of %v after the others: XADD → frame; deliveries received / expected; CPU in cores, renderer / feedbench (its clients inflate every frame) / redis-server", r.Cfg.Duration/time.Duration(max(r.Cfg.Rounds, 1))),
			Value: fmt.Sprintf("p50 %s · p99 %s · max %s; %d / %d; %.2f / %.2f / %.2f", ms(z.Q.P50), ms(z.Q.P99), ms(z.Q.Max), z.Q.N, z.Expected, z.RendererCores, z.BenchCores, z.RedisCores)},
		{Bench: "latency", Metric: "compressing clients: XADD → line handed to the hubs, as the renderer measures it (" + handoffMetric + "; bucket upper bounds): the part of the path before compression",
			Value: quantiles(z.Handoff, "lines")},
		{Bench: "latency", Metric: "compressing clients: renderer CPU per delivered frame, against the plain rounds' and the baseline's (plain frames)",
			Value: fmt.Sprintf("%.1f µs = %.2f× plain (%.1f µs), %.2f× the baseline (%.1f µs)", z.cpuPerFrame(), ratio(z.cpuPerFrame(), r.cpuPerFrame()), r.cpuPerFrame(), ratio(z.cpuPerFrame(), r.Base.cpuPerFrame()), r.Base.cpuPerFrame())},
		{Bench: "latency", Metric: "compressing clients: bytes read off the wire per line delivered, against the plain rounds' and the baseline's",
			Value: fmt.Sprintf("%.0f B = %.2f× plain (%.0f B), %.2f× the baseline (%.0f B)", z.WirePerLine(), ratio(z.WirePerLine(), r.WirePerLine()), r.WirePerLine(), ratio(z.WirePerLine(), r.Base.WirePerLine()), r.Base.WirePerLine())},
	}
}

// WirePerLine is the bytes read off the clients' connections per line
// delivered.
func (p latencyPhase) WirePerLine() float64 {
	if len(p.lat) == 0 {
		return 0
	}
	return float64(p.wire) / float64(len(p.lat))
}

// roundsNote says, in the headline row, how the lines were measured.
func (r LatencyResult) roundsNote() string {
	if n := len(r.RoundP99); n > 1 {
		return fmt.Sprintf(" (%d rounds of %v)", n, r.Cfg.Duration/time.Duration(n))
	}
	return ""
}

// pooledNote says, in the ratio rows, that each side pools its rounds.
func (r LatencyResult) pooledNote() string {
	if len(r.RoundP99) > 1 {
		return " (each over all its rounds' deliveries)"
	}
	return ""
}

// roundRatios is the value of the per-round row: each renderer round's
// p99 against the baseline's round of the same pair.
func (r LatencyResult) roundRatios() string {
	var parts []string
	for i, p := range r.RoundP99 {
		if i >= len(r.Base.RoundP99) {
			break
		}
		bp := r.Base.RoundP99[i]
		parts = append(parts, fmt.Sprintf("%s / %s = %.2f×", ms(p), ms(bp), ratio(float64(p), float64(bp))))
	}
	return strings.Join(parts, "; ")
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// startCPUProfile starts a CPU profile into path ("" for none) and returns
// its stop function.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// quantiles is the value of a row of a renderer histogram of seconds: its
// p50, p99 and max bucket bounds over the window, and its count of what.
func quantiles(h histogram, what string) string {
	if h.count() == 0 {
		return "—"
	}
	d := func(q float64) string {
		b := h.quantile(q)
		if math.IsInf(b, 1) {
			return "∞ (past the last bucket)"
		}
		return ms(time.Duration(b * float64(time.Second)))
	}
	return fmt.Sprintf("p50 ≤ %s · p99 ≤ %s · max ≤ %s (%.0f %s)", d(0.5), d(0.99), d(1), h.count(), what)
}

// garbage is the garbage row's value.
func (r LatencyResult) garbage() string {
	g := r.Garbage
	if g.Cycles == 0 && g.Bytes == 0 || r.Sent == 0 {
		return "—"
	}
	secs := r.Cfg.Duration.Seconds()
	return fmt.Sprintf("%.1f KiB per line; %.0f GC cycles (%.1f a second)", g.Bytes/1024/float64(r.Sent), g.Cycles, g.Cycles/secs)
}

// perCommit is the lines-per-commit row's value.
func (r LatencyResult) perCommit() string {
	if r.Garbage.Commits == 0 || r.Sent == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f (%.0f commits)", float64(r.Sent)/r.Garbage.Commits, r.Garbage.Commits)
}

func (r LatencyResult) where() string {
	if r.InProcess {
		return "renderer wired in the feedbench process"
	}
	return "one renderer process (-ws-engine " + DefaultEngine() + ")"
}

func (r LatencyResult) cpuString() string {
	if r.InProcess {
		return fmt.Sprintf("%.2f (renderer, clients and writer in one process) / — / %.2f", r.BenchCores, r.RedisCores)
	}
	return fmt.Sprintf("%.2f / %.2f / %.2f", r.RendererCores, r.BenchCores, r.RedisCores)
}

func mustCPU(pid int) time.Duration {
	d, _ := ProcCPU(pid)
	return d
}

// Latencies returns the latency of every delivery of a line w sent since
// its last Reset, and per send time (one per Broadcast) the latest of them.
func Latencies(w *Writer, ds []Delivery) ([]time.Duration, map[int64]time.Duration) {
	lat := make([]time.Duration, 0, len(ds))
	last := map[int64]time.Duration{}
	for _, d := range ds {
		at, _, ok := w.Sent(d.ID)
		if !ok {
			continue
		}
		l := time.Duration(d.At - at)
		lat = append(lat, l)
		last[at] = max(last[at], l)
	}
	return lat, last
}

func dumpDeliveries(path string, w *Writer, from time.Time, ds []Delivery) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	defer bw.Flush()
	for _, d := range ds {
		if at, _, ok := w.Sent(d.ID); ok {
			fmt.Fprintf(bw, "%d,%d\n", (at-from.UnixNano())/1000, (d.At-at)/1000)
		}
	}
}

// windowP99 returns the p99 latency of the deliveries of each window of
// send time since from, sorted.
func windowP99(w *Writer, from time.Time, window time.Duration, ds []Delivery) []time.Duration {
	by := map[int64][]time.Duration{}
	for _, d := range ds {
		at, _, ok := w.Sent(d.ID)
		if !ok {
			continue
		}
		k := (at - from.UnixNano()) / int64(window)
		by[k] = append(by[k], time.Duration(d.At-at))
	}
	out := make([]time.Duration, 0, len(by))
	for _, lat := range by {
		out = append(out, Summarize(lat).P99)
	}
	slices.Sort(out)
	return out
}

func (r LatencyResult) windows() string {
	if len(r.WindowP99) == 0 {
		return "—"
	}
	w := r.WindowP99
	return fmt.Sprintf("%s / %s / %s", ms(w[0]), ms(w[len(w)/2]), ms(w[len(w)-1]))
}

// prefillNote says how grown the store was before the rounds.
func (r LatencyResult) prefillNote() string {
	if r.Cfg.Prefill <= 0 {
		return "; the store empty before the first round"
	}
	return fmt.Sprintf("; the store grown by %d lines of %d other games first", r.Cfg.Prefill, r.Cfg.Games)
}

// roundNote is the renderer's own view of a round for its log line (empty
// for the broadcaster): where its tail was, before the sockets or in them.
func (p latencyPhase) roundNote() string {
	if p.Handoff.count() == 0 {
		return ""
	}
	return fmt.Sprintf("; hand-off %s; reads %s; commits %s",
		quantiles(p.Handoff, "lines"), quantiles(p.Reads, "reads"), quantiles(p.Commits, "commits"))
}
