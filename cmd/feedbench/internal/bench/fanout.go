package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ClientReport is what the fan-out's client process prints at the end.
type ClientReport struct {
	Connected  int
	Frames     int64
	Deliveries []Delivery
	Dropped    int
	DropErr    string
}

// FanoutConfig sizes the fan-out benchmark.
type FanoutConfig struct {
	Dir      string
	Renderer string // renderer binary
	Self     string // this program, run as "SELF clients ..." for the clients
	Games    int
	Clients  int
	Rounds   int // rounds of one marked line to every game
	Every    time.Duration
	Log      io.Writer
	// HeapProfile, when set, is written once the clients are connected
	// (useful with an in-process renderer: Renderer "").
	HeapProfile string
	// CPUProfile, when set, is written over the delivery rounds.
	CPUProfile string
}

// FanoutResult holds the fan-out figures.
type FanoutResult struct {
	Cfg                     FanoutConfig
	RSSBefore, RSSConnected int64
	RSSAfter                int64
	ConnectTime             time.Duration
	Q                       Quantiles
	Expected                int
	ToAll                   Quantiles // per round: time until the last client had the line
	Dropped                 int
}

// Fanout runs one real renderer process and a separate client process
// holding Clients websockets (spread over Games), measures the renderer's
// RSS before and after they connect, then sends Rounds lines to every game
// at once and measures their delivery to every client.
func Fanout(ctx context.Context, cfg FanoutConfig) (FanoutResult, error) {
	res := FanoutResult{Cfg: cfg}
	st, err := openStage(ctx, cfg.Renderer, cfg.Dir, "fanout", "fan", cfg.Games)
	if err != nil {
		return res, err
	}
	defer st.Close()
	rdb, m, games, rend := st.rdb, st.mint, st.games, st.rend
	// A few idle tail periods, so that the baseline includes the
	// renderer's steady state rather than its start-up.
	time.Sleep(3 * time.Second)
	if res.RSSBefore, err = RSS(rend.Pid()); err != nil {
		return res, err
	}
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)

	cmd := exec.CommandContext(ctx, cfg.Self, "clients", "-n", strconv.Itoa(cfg.Clients), "-url", rend.URL(),
		"-prefix", "fan", "-games", strconv.Itoa(cfg.Games))
	cmd.Stderr = cfg.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return res, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("bench: start clients: %w", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "connected ") {
		return res, fmt.Errorf("bench: clients process: %q: %v", line, err)
	}
	res.ConnectTime = time.Since(start)
	fmt.Fprintf(cfg.Log, "fanout: %d clients %s", cfg.Clients, line)
	time.Sleep(3 * time.Second) // let the renderer settle with its clients
	if res.RSSConnected, err = RSS(rend.Pid()); err != nil {
		return res, err
	}
	if cfg.HeapProfile != "" {
		if err := writeHeapProfile(cfg.HeapProfile); err != nil {
			return res, err
		}
		var ms1 runtime.MemStats
		runtime.ReadMemStats(&ms1)
		n := int64(cfg.Clients)
		fmt.Fprintf(cfg.Log, "fanout: heap profile in %s; %d goroutines in this process; per client: stacks %d B, heap in use %d B, runtime total (Sys) %d B\n",
			cfg.HeapProfile, runtime.NumGoroutine(), int64(ms1.StackInuse-ms0.StackInuse)/n,
			(int64(ms1.HeapInuse)-int64(ms0.HeapInuse))/n, (int64(ms1.Sys)-int64(ms0.Sys))/n)
	}

	stopProfile, err := startCPUProfile(cfg.CPUProfile)
	if err != nil {
		return res, err
	}
	defer stopProfile()
	w := NewWriter(rdb, m, games)
	tick := time.NewTicker(cfg.Every)
	defer tick.Stop()
	for i := range cfg.Rounds {
		if err := w.Broadcast(ctx); err != nil {
			return res, err
		}
		if i < cfg.Rounds-1 {
			<-tick.C
		}
	}
	res.Expected = cfg.Rounds * cfg.Clients
	if _, err := fmt.Fprintf(stdin, "report %d\n", res.Expected); err != nil {
		return res, err
	}
	var rep ClientReport
	if err := json.NewDecoder(out).Decode(&rep); err != nil {
		return res, fmt.Errorf("bench: clients report: %w", err)
	}
	if res.RSSAfter, err = RSS(rend.Pid()); err != nil { // the clients are still connected
		return res, err
	}
	if cfg.HeapProfile != "" {
		if err := writeHeapProfile(cfg.HeapProfile + ".after"); err != nil {
			return res, err
		}
		var ms2 runtime.MemStats
		runtime.ReadMemStats(&ms2)
		n := int64(cfg.Clients)
		fmt.Fprintf(cfg.Log, "fanout: after the rounds, per client (after GC): stacks %d B, heap in use %d B, heap idle not released %d B; profile %s.after\n",
			int64(ms2.StackInuse-ms0.StackInuse)/n, (int64(ms2.HeapInuse)-int64(ms0.HeapInuse))/n,
			(int64(ms2.HeapIdle)-int64(ms2.HeapReleased))/n, cfg.HeapProfile)
	}
	res.Dropped = rep.Dropped
	lat, last := Latencies(w, rep.Deliveries)
	res.Q = Summarize(lat)
	var rounds []time.Duration
	for _, d := range last {
		rounds = append(rounds, d)
	}
	res.ToAll = Summarize(rounds)
	fmt.Fprintf(cfg.Log, "fanout: RSS %d MiB idle → %d MiB with %d clients → %d MiB after %d rounds; %d of %d deliveries: %s; to all: %s\n",
		res.RSSBefore>>20, res.RSSConnected>>20, cfg.Clients, res.RSSAfter>>20, cfg.Rounds, res.Q.N, res.Expected, res.Q, res.ToAll)
	if rep.DropErr != "" {
		fmt.Fprintf(cfg.Log, "fanout: %d clients dropped; first: %s\n", rep.Dropped, rep.DropErr)
	}
	return res, nil
}

// Rows are the table's fan-out figures.
func (r FanoutResult) Rows() []Row {
	c := r.Cfg
	per := float64(r.RSSConnected-r.RSSBefore) / float64(c.Clients) / 1024
	perAfter := float64(r.RSSAfter-r.RSSBefore) / float64(c.Clients) / 1024
	return []Row{
		{Bench: "fan-out", Metric: fmt.Sprintf("renderer RSS per websocket client (%d clients over %d games, in a separate process; RSS %d → %d MiB)",
			c.Clients, c.Games, r.RSSBefore>>20, r.RSSConnected>>20),
			Value: fmt.Sprintf("%.1f KiB", per), Target: "≤ 40 KiB", Met: verdict(per <= 40)},
		{Bench: "fan-out", Metric: fmt.Sprintf("… after the delivery rounds (RSS %d MiB)", r.RSSAfter>>20),
			Value: fmt.Sprintf("%.1f KiB", perAfter)},
		{Bench: "fan-out", Metric: fmt.Sprintf("connect %d clients (upgrade + state + backfill)", c.Clients),
			Value: r.ConnectTime.Round(time.Millisecond).String()},
		{Bench: "fan-out", Metric: fmt.Sprintf("XADD → frame, one line to each of %d games at once × %d rounds, every delivery", c.Games, c.Rounds),
			Value: fmt.Sprintf("p50 %s · p99 %s · max %s", ms(r.Q.P50), ms(r.Q.P99), ms(r.Q.Max))},
		{Bench: "fan-out", Metric: "per round, until the last of the clients has its line",
			Value: fmt.Sprintf("p50 %s · max %s", ms(r.ToAll.P50), ms(r.ToAll.Max))},
		{Bench: "fan-out", Metric: "deliveries received / expected (clients dropped)",
			Value: fmt.Sprintf("%d / %d (%d dropped)", r.Q.N, r.Expected, r.Dropped)},
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.GC()
	return pprof.Lookup("heap").WriteTo(f, 0)
}
