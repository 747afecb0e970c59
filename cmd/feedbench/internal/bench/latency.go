package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
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
	// Audit is the clients' line frames checked against the delivery
	// contract (the renderer's rounds only: the baseline promises none).
	Audit Audit

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
	p.Audit = p.Audit.plus(o.Audit)
	p.Q = Summarize(p.lat)
	if n := len(p.lat); n > 0 {
		p.FramesPerLine = float64(p.Frames) / float64(n)
		p.BytesPerLine = float64(p.bytes) / float64(n)
	}
}

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
	perGame := clientsPerGame(len(st.games), cfg.Clients)
	// The window's counters start once every client has its warm-up's
	// lines: a connection sends in seq order, so the frames before them
	// (the state and the backfill each fresh client gets, which grows with
	// every round before) are then all read, and are not counted as the
	// window's. Without the wait, a busy host let them in: one CI run saw
	// the compressing round, whose backfill holds the plain round's lines,
	// read 0.81 of the plain round's wire bytes per line, against 0.41-0.53.
	if _, err := awaitDelivered(ctx, w, sw, perGame, "every warm-up line delivered"); err != nil {
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
	res.Expected, _ = awaitDelivered(ctx, w, sw, perGame, "every line delivered")
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
	ds := sw.Deliveries() // every client's line frames, copied once for the reports below
	lat, _ := Latencies(w, ds)
	res.WindowP99 = windowP99(w, from, time.Second, ds)
	if dump != "" {
		dumpDeliveries(dump, w, from, ds)
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
	if w.pub == nil {
		res.Audit = auditDeliveries(w, cfg.Clients, sw.Lost(), ds)
		fmt.Fprintf(cfg.Log, "latency: %s: the delivery contract: %s\n", srv.URL(), res.Audit)
	}
	return res, nil
}

// clientsPerGame is how many of n clients Connect puts on each game, of
// games: client i watches game i mod games.
func clientsPerGame(games, n int) []int {
	perGame := make([]int, games)
	for i := range n {
		perGame[i%games]++
	}
	return perGame
}

// awaitDelivered waits, up to 10 s, until the clients of sw have every
// line w sent since its last Reset, game g's perGame[g] times, and returns
// how many deliveries that is; what names the wait in its timeout error.
func awaitDelivered(ctx context.Context, w *Writer, sw *Swarm, perGame []int, what string) (int, error) {
	want := 0
	for g, sent := range w.SentGames() {
		want += sent * perGame[g]
	}
	_, err := proc.Poll(ctx, 10*time.Second, what, func() (bool, error) {
		lat, _ := Latencies(w, sw.Deliveries())
		return len(lat) >= want, nil
	})
	return want, err
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

// WirePerLine is the bytes read off the clients' connections per line
// delivered.
func (p latencyPhase) WirePerLine() float64 {
	if len(p.lat) == 0 {
		return 0
	}
	return float64(p.wire) / float64(len(p.lat))
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
