package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"time"

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
	Duration time.Duration
	Log      io.Writer
	// CPUProfile, when set, is written for the measured window (useful
	// with an in-process renderer: Renderer "").
	CPUProfile string
	// Dump, when set, receives one CSV line per delivery: send time since
	// the measured window began and latency, in µs.
	Dump string
}

// LatencyResult is XADD → websocket frame latency over every delivery.
type LatencyResult struct {
	Cfg        LatencyConfig
	Q          Quantiles
	Sent       int
	Expected   int // deliveries expected: each line times the clients of its game
	Dropped    int
	AchievedHz float64
	// FramesPerLine is websocket frames received per marked line delivered
	// over the measured window (line frames plus state frames).
	FramesPerLine float64
	// WindowP99 is the p99 of each second of the measured window (by send
	// time), sorted: a shared machine's busy spells show as a few bad
	// seconds rather than a higher p99 everywhere.
	WindowP99 []time.Duration
	// CPU used over the measured window, in cores: the renderer (this
	// process when in-process), this process (clients and writer), Redis.
	RendererCores, BenchCores, RedisCores float64
	InProcess                             bool
}

// Latency runs one real renderer process, connects Clients websocket
// clients from this process (spread over Games), writes marked chat lines
// at Rate for Warmup + Duration and measures, for every line every client
// receives in the measured window, the time from just before its XADD to
// the frame's arrival.
func Latency(ctx context.Context, cfg LatencyConfig) (LatencyResult, error) {
	res := LatencyResult{Cfg: cfg}
	st, err := openStage(ctx, cfg.Renderer, cfg.Dir, "latency", "lat", cfg.Games)
	if err != nil {
		return res, err
	}
	defer st.Close()
	r, rdb, m, games, rend := st.redis, st.rdb, st.mint, st.games, st.rend
	start := time.Now()
	sw, err := Connect(ctx, SwarmConfig{BaseURL: rend.URL(), Games: games, N: cfg.Clients})
	if err != nil {
		return res, err
	}
	defer sw.Close()
	fmt.Fprintf(cfg.Log, "latency: %d clients connected over %d games in %v\n", cfg.Clients, cfg.Games, time.Since(start).Round(time.Millisecond))

	w := NewWriter(rdb, m, games)
	if _, err := w.Paced(ctx, cfg.Rate, cfg.Warmup); err != nil {
		return res, err
	}
	w.Reset()
	frames0 := sw.Frames()
	stopProfile, err := startCPUProfile(cfg.CPUProfile)
	if err != nil {
		return res, err
	}
	res.InProcess = cfg.Renderer == ""
	rend0, _ := ProcCPU(rend.Pid())
	self0, redis0 := SelfCPU(), mustCPU(r.Pid())
	from := time.Now()
	sent, err := w.Paced(ctx, cfg.Rate, cfg.Duration)
	wall := time.Since(from).Seconds()
	rend1, _ := ProcCPU(rend.Pid())
	res.RendererCores = (rend1 - rend0).Seconds() / wall
	res.BenchCores = (SelfCPU() - self0).Seconds() / wall
	res.RedisCores = (mustCPU(r.Pid()) - redis0).Seconds() / wall
	stopProfile()
	if err != nil {
		return res, err
	}
	res.Sent = sent
	res.AchievedHz = float64(sent) / wall
	perGame := make([]int, len(games))
	for i := range cfg.Clients {
		perGame[i%len(games)]++
	}
	for g, n := range w.SentGames() {
		res.Expected += n * perGame[g]
	}
	_, _ = proc.Poll(ctx, 10*time.Second, "every line delivered", func() (bool, error) {
		lat, _ := Latencies(w, sw.Deliveries())
		return len(lat) >= res.Expected, nil
	})
	lat, _ := Latencies(w, sw.Deliveries())
	res.WindowP99 = windowP99(w, from, time.Second, sw.Deliveries())
	if cfg.Dump != "" {
		dumpDeliveries(cfg.Dump, w, from, sw.Deliveries())
	}
	if len(lat) > 0 {
		res.FramesPerLine = float64(sw.Frames()-frames0) / float64(len(lat))
	}
	res.Q = Summarize(lat)
	res.Dropped, _ = sw.Dropped()
	fmt.Fprintf(cfg.Log, "latency: %d lines at %.0f/s, %d of %d deliveries: %s\n", sent, res.AchievedHz, res.Q.N, res.Expected, res.Q)
	return res, nil
}

// Rows are the table's latency figures.
func (r LatencyResult) Rows() []Row {
	c := r.Cfg
	ok := r.Q.P99 < 25*time.Millisecond && r.Q.N == r.Expected
	return []Row{
		{Bench: "latency", Metric: fmt.Sprintf("XADD → websocket frame, %.0f events/s (gamesim's mix of kinds) over %d games, %d clients, %s; %d lines in %v",
			c.Rate, c.Games, c.Clients, r.where(), r.Sent, c.Duration),
			Value:  fmt.Sprintf("p50 %s · p99 %s · max %s", ms(r.Q.P50), ms(r.Q.P99), ms(r.Q.Max)),
			Target: "p99 < 25 ms", Met: verdict(ok)},
		{Bench: "latency", Metric: fmt.Sprintf("p99 of each second of the run (%d seconds): best / median / worst", len(r.WindowP99)),
			Value: r.windows()},
		{Bench: "latency", Metric: "deliveries received / expected (clients dropped)",
			Value: fmt.Sprintf("%d / %d (%d dropped)", r.Q.N, r.Expected, r.Dropped)},
		{Bench: "latency", Metric: "websocket frames received per line delivered (line + scoreboard state frames)",
			Value: fmt.Sprintf("%.2f", r.FramesPerLine)},
		{Bench: "latency", Metric: "CPU while writing, in cores: renderer / feedbench (clients + writer) / redis-server",
			Value: r.cpuString()},
	}
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

func (r LatencyResult) where() string {
	if r.InProcess {
		return "renderer wired in the feedbench process"
	}
	return "one renderer process"
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
