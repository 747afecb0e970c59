package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/codemojex/feed/internal/proc"
)

// ClientReport is what the fan-out's client process prints at the end.
type ClientReport struct {
	Connected  int
	Frames     int64
	Deliveries []Delivery
	Lost       []int  // the clients that lost their connection
	DropErr    string // the first one's error
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
	// Baseline also measures the bare broadcaster (run as "Self
	// broadcaster") in the same run.
	Baseline bool
	// PollEngines are the poller engines of the bare broadcaster
	// (EngineNbioStd) also measured in the same run, after
	// the baseline.
	PollEngines []string
	// RendererOther, with a Renderer binary, measures last a renderer run
	// with the other websocket engine (OtherEngine) on the same store, in
	// place of the first.
	RendererOther bool
	// Streams, with a Renderer binary, measures last a renderer whose
	// clients take the event stream, the page's fallback where websockets
	// are blocked, in place of the one before.
	Streams bool

	streamClients bool // this phase's clients take the event stream
}

// FanoutResult holds the fan-out figures: the renderer's and, when
// Cfg.Baseline, the bare broadcaster's.
type FanoutResult struct {
	Cfg FanoutConfig
	fanoutPhase
	Base        *fanoutPhase
	Polls       []PollPhase
	Engine      string       // the renderer's websocket engine (DefaultEngine)
	OtherEngine string       // the one measured beside it (OtherEngine)
	Other       *fanoutPhase // the renderer with -ws-engine OtherEngine
	Streams     *fanoutPhase // the renderer, its clients on the event stream
}

// PollPhase is the fan-out figures of the bare broadcaster on a poller
// engine.
type PollPhase struct {
	Engine string
	fanoutPhase
}

// fanoutPhase is one server's fan-out figures.
type fanoutPhase struct {
	RSSBefore, RSSConnected int64
	RSSAfter                int64
	ConnectTime             time.Duration
	Q                       Quantiles
	Expected                int
	ToAll                   Quantiles // per round: time until the last client had the line
	Dropped                 int
	// Audit is the clients' line frames checked against the delivery
	// contract (a renderer's phases only: the baseline promises none).
	Audit Audit
}

// Fanout runs one real renderer process and a separate client process
// holding Clients websockets (spread over Games), measures the renderer's
// RSS before and after they connect, then sends Rounds lines to every game
// at once and measures their delivery to every client. With Cfg.Baseline
// it then does the same with the bare broadcaster.
func Fanout(ctx context.Context, cfg FanoutConfig) (FanoutResult, error) {
	res := FanoutResult{Cfg: cfg, Engine: DefaultEngine(), OtherEngine: OtherEngine()}
	st, err := openStage(ctx, cfg.Renderer, cfg.Dir, "fanout", "fan", cfg.Games)
	if err != nil {
		return res, err
	}
	defer st.Close()
	res.fanoutPhase, err = fanoutRun(ctx, cfg, st, st.rend, NewWriter(st.rdb, st.mint, st.games), 1, true)
	if err != nil || !cfg.Baseline {
		return res, err
	}
	b, err := StartBroadcaster(ctx, cfg.Self, st.redis.URL(), cfg.Log)
	if err != nil {
		return res, err
	}
	defer b.Stop()
	base, err := fanoutRun(ctx, cfg, st, b, NewPublisher(st.rdb, st.mint, st.games), 0, false)
	if err != nil {
		return res, fmt.Errorf("baseline: %w", err)
	}
	res.Base = &base
	for _, engine := range cfg.PollEngines {
		ph, err := fanoutBroadcaster(ctx, cfg, st, engine)
		if err != nil {
			return res, fmt.Errorf("poller broadcaster %s: %w", engine, err)
		}
		res.Polls = append(res.Polls, PollPhase{Engine: engine, fanoutPhase: ph})
	}
	if cfg.Renderer == "" {
		return res, nil
	}
	last, _ := st.rend.(*Renderer)
	stored := 1 + cfg.Rounds // lines per game: the seed line and the rounds so far
	if cfg.RendererOther {
		// The renderer goes; another one, under another consumer name
		// (no lease to wait out) and on the same store, serves on the
		// other engine.
		rn, err := nextRenderer(ctx, cfg, st, last, "fan-other", "-ws-engine", res.OtherEngine)
		if err != nil {
			return res, err
		}
		defer rn.Stop()
		fmt.Fprintf(cfg.Log, "fanout: renderer, -ws-engine %s\n", res.OtherEngine)
		// Each client backfills the lines stored so far.
		ph, err := fanoutRun(ctx, cfg, st, rn, NewWriter(st.rdb, st.mint, st.games), stored, false)
		if err != nil {
			return res, fmt.Errorf("renderer on %s: %w", res.OtherEngine, err)
		}
		res.Other, last, stored = &ph, rn, stored+cfg.Rounds
	}
	if cfg.Streams {
		rn, err := nextRenderer(ctx, cfg, st, last, "fan-streams")
		if err != nil {
			return res, err
		}
		defer rn.Stop()
		fmt.Fprintf(cfg.Log, "fanout: renderer, clients on the event stream\n")
		scfg := cfg
		scfg.streamClients = true
		ph, err := fanoutRun(ctx, scfg, st, rn, NewWriter(st.rdb, st.mint, st.games), stored, false)
		if err != nil {
			return res, fmt.Errorf("renderer with event streams: %w", err)
		}
		res.Streams = &ph
	}
	return res, nil
}

// nextRenderer kills last (when there is one) and starts another renderer
// process on the same store and Redis under consumer, with extra flags.
func nextRenderer(ctx context.Context, cfg FanoutConfig, st *stage, last *Renderer, consumer string, extra ...string) (*Renderer, error) {
	if last != nil {
		last.Kill()
	}
	rn, err := StartRenderer(cfg.Renderer, RendererArgs{RedisURL: st.redis.URL(), DB: filepath.Join(cfg.Dir, "fanout.db"),
		Consumer: consumer, LogDir: cfg.Dir, Extra: extra})
	if err != nil {
		return nil, err
	}
	if err := rn.WaitReady(ctx, 30*time.Second); err != nil {
		rn.Stop()
		return nil, err
	}
	return rn, nil
}

// fanoutBroadcaster measures the bare broadcaster on engine, as its own
// process.
func fanoutBroadcaster(ctx context.Context, cfg FanoutConfig, st *stage, engine string) (fanoutPhase, error) {
	b, err := StartBroadcasterEngine(ctx, cfg.Self, engine, st.redis.URL(), cfg.Log)
	if err != nil {
		return fanoutPhase{}, err
	}
	defer b.Stop()
	fmt.Fprintf(cfg.Log, "fanout: bare broadcaster, engine %s\n", engine)
	return fanoutRun(ctx, cfg, st, b, NewPublisher(st.rdb, st.mint, st.games), 0, false)
}

// fanoutRun measures srv: its RSS idle, with the clients and after the
// rounds written by w; backfilled is the line frames each client gets on
// connecting; profile says whether the profiles asked for are taken.
func fanoutRun(ctx context.Context, cfg FanoutConfig, st *stage, srv target, w *Writer, backfilled int, profile bool) (fanoutPhase, error) {
	var res fanoutPhase
	pcfg := cfg
	if !profile {
		pcfg.HeapProfile, pcfg.CPUProfile = "", ""
	}
	// A few idle tail periods, so that the baseline includes the
	// renderer's steady state rather than its start-up.
	time.Sleep(3 * time.Second)
	var err error
	if res.RSSBefore, err = RSS(srv.Pid()); err != nil {
		return res, err
	}
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)

	start := time.Now()
	cl, err := startClients(ctx, cfg, srv.URL(), backfilled)
	if err != nil {
		return res, err
	}
	defer cl.close()
	res.ConnectTime = time.Since(start)
	time.Sleep(3 * time.Second) // let the server settle with its clients
	if res.RSSConnected, err = RSS(srv.Pid()); err != nil {
		return res, err
	}
	if err := heapNote(pcfg, "", &ms0); err != nil {
		return res, err
	}
	if err := broadcastRounds(ctx, pcfg, w); err != nil {
		return res, err
	}
	res.Expected = cfg.Rounds * cfg.Clients
	rep, err := cl.report(res.Expected)
	if err != nil {
		return res, err
	}
	if res.RSSAfter, err = RSS(srv.Pid()); err != nil { // the clients are still connected
		return res, err
	}
	if err := heapNote(pcfg, ".after", &ms0); err != nil {
		return res, err
	}
	res.summarize(cfg, w, rep)
	return res, nil
}

// clients is the fan-out's client process ("SELF clients ...").
type clients struct {
	p     *proc.Process
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startClients starts the client process and waits until it says its
// clients are connected.
func startClients(ctx context.Context, cfg FanoutConfig, url string, backfilled int) (*clients, error) {
	cmd := exec.CommandContext(ctx, cfg.Self, "clients", "-n", strconv.Itoa(cfg.Clients), "-url", url,
		"-prefix", "fan", "-games", strconv.Itoa(cfg.Games), "-backfilled", strconv.Itoa(backfilled),
		"-stream="+strconv.FormatBool(cfg.streamClients))
	cmd.Stderr = cfg.Log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p, err := proc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("bench: start clients: %w", err)
	}
	cl := &clients{p: p, stdin: stdin, out: bufio.NewReader(stdout)}
	line, err := cl.out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "connected ") {
		cl.close()
		return nil, fmt.Errorf("bench: clients process: %q: %v", line, err)
	}
	fmt.Fprintf(cfg.Log, "fanout: %d clients %s", cfg.Clients, line)
	return cl, nil
}

// report asks the client process for its deliveries, once it holds
// expected of them (or gives up waiting).
func (cl *clients) report(expected int) (ClientReport, error) {
	var rep ClientReport
	if _, err := fmt.Fprintf(cl.stdin, "report %d\n", expected); err != nil {
		return rep, err
	}
	if err := json.NewDecoder(cl.out).Decode(&rep); err != nil {
		return rep, fmt.Errorf("bench: clients report: %w", err)
	}
	return rep, nil
}

func (cl *clients) close() { cl.p.Kill() }

// broadcastRounds writes one line to every game, Rounds times, Every
// apart, under the CPU profile if one was asked for.
func broadcastRounds(ctx context.Context, cfg FanoutConfig, w *Writer) error {
	stopProfile, err := startCPUProfile(cfg.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	tick := time.NewTicker(cfg.Every)
	defer tick.Stop()
	for i := range cfg.Rounds {
		if err := w.Broadcast(ctx); err != nil {
			return err
		}
		if i < cfg.Rounds-1 {
			<-tick.C
		}
	}
	return nil
}

// heapNote writes a heap profile to cfg.HeapProfile+suffix and logs this
// process's memory per client since ms0, when a heap profile was asked
// for (useful with the renderer in this process).
func heapNote(cfg FanoutConfig, suffix string, ms0 *runtime.MemStats) error {
	if cfg.HeapProfile == "" {
		return nil
	}
	if err := writeHeapProfile(cfg.HeapProfile + suffix); err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	n := int64(cfg.Clients)
	if suffix == "" {
		fmt.Fprintf(cfg.Log, "fanout: heap profile in %s; %d goroutines in this process; per client: stacks %d B, heap in use %d B, runtime total (Sys) %d B\n",
			cfg.HeapProfile, runtime.NumGoroutine(), int64(ms.StackInuse-ms0.StackInuse)/n,
			(int64(ms.HeapInuse)-int64(ms0.HeapInuse))/n, (int64(ms.Sys)-int64(ms0.Sys))/n)
		return nil
	}
	fmt.Fprintf(cfg.Log, "fanout: after the rounds, per client (after GC): stacks %d B, heap in use %d B, heap idle not released %d B; profile %s%s\n",
		int64(ms.StackInuse-ms0.StackInuse)/n, (int64(ms.HeapInuse)-int64(ms0.HeapInuse))/n,
		(int64(ms.HeapIdle)-int64(ms.HeapReleased))/n, cfg.HeapProfile, suffix)
	return nil
}

// summarize fills the delivery figures from the clients' report and logs
// them.
func (res *fanoutPhase) summarize(cfg FanoutConfig, w *Writer, rep ClientReport) {
	res.Dropped = len(rep.Lost)
	lat, last := Latencies(w, rep.Deliveries)
	res.Q = Summarize(lat)
	var rounds []time.Duration
	for _, d := range last {
		rounds = append(rounds, d)
	}
	res.ToAll = Summarize(rounds)
	fmt.Fprintf(cfg.Log, "fanout: RSS %d MiB idle → %d MiB with %d clients → %d MiB after %d rounds; %d of %d deliveries: %s; to all: %s\n",
		res.RSSBefore>>20, res.RSSConnected>>20, cfg.Clients, res.RSSAfter>>20, cfg.Rounds, res.Q.N, res.Expected, res.Q, res.ToAll)
	if w.pub == nil {
		res.Audit = auditDeliveries(w, cfg.Clients, rep.Lost, rep.Deliveries)
		fmt.Fprintf(cfg.Log, "fanout: the delivery contract: %s\n", res.Audit)
	}
	if rep.DropErr != "" {
		fmt.Fprintf(cfg.Log, "fanout: %d clients dropped; first: %s\n", len(rep.Lost), rep.DropErr)
	}
}

// Rows are the table's fan-out figures.
func (r FanoutResult) Rows() []Row {
	c := r.Cfg
	per := float64(r.RSSConnected-r.RSSBefore) / float64(c.Clients) / 1024
	perAfter := float64(r.RSSAfter-r.RSSBefore) / float64(c.Clients) / 1024
	rows := []Row{
		{Bench: "fan-out", Metric: fmt.Sprintf("renderer RSS per websocket client (-ws-engine %s; %d clients over %d games, in a separate process; RSS %d → %d MiB)",
			r.Engine, c.Clients, c.Games, r.RSSBefore>>20, r.RSSConnected>>20),
			Value: fmt.Sprintf("%.1f KiB", per), Target: "≤ 24 KiB", Met: verdict(per <= 24)},
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
		auditRow("fan-out", "the renderer's phases", r.contract()),
	}
	b := r.Base
	if b == nil {
		return rows
	}
	basePer := float64(b.RSSConnected-b.RSSBefore) / float64(c.Clients) / 1024
	rows = append(rows,
		Row{Bench: "fan-out", Metric: fmt.Sprintf("baseline: bare broadcaster RSS per websocket client (RSS %d → %d MiB; %d MiB after the rounds)", b.RSSBefore>>20, b.RSSConnected>>20, b.RSSAfter>>20),
			Value: fmt.Sprintf("%.1f KiB", basePer)},
		Row{Bench: "fan-out", Metric: "baseline: PUBLISH → frame, every delivery",
			Value: fmt.Sprintf("p50 %s · p99 %s · max %s", ms(b.Q.P50), ms(b.Q.P99), ms(b.Q.Max))},
		Row{Bench: "fan-out", Metric: "baseline: per round, until the last of the clients has its line; deliveries (dropped)",
			Value: fmt.Sprintf("p50 %s · max %s; %d / %d (%d dropped)", ms(b.ToAll.P50), ms(b.ToAll.Max), b.Q.N, b.Expected, b.Dropped)},
		Row{Bench: "fan-out", Metric: "round to the last client, median round: renderer / baseline",
			Value:  fmt.Sprintf("%s / %s = %.2f×", ms(r.ToAll.P50), ms(b.ToAll.P50), ratio(float64(r.ToAll.P50), float64(b.ToAll.P50))),
			Target: "≤ 2×", Met: verdict(b.Q.N > 0 && r.ToAll.P50 <= 2*b.ToAll.P50)},
	)
	for _, p := range r.Polls {
		per := float64(p.RSSConnected-p.RSSBefore) / float64(c.Clients) / 1024
		rows = append(rows,
			Row{Bench: "fan-out", Metric: fmt.Sprintf("memory per client: poller broadcaster (%s; RSS %d → %d MiB; %.1f KiB per client after the rounds)",
				pollEngineNames[p.Engine], p.RSSBefore>>20, p.RSSConnected>>20, float64(p.RSSAfter-p.RSSBefore)/float64(c.Clients)/1024),
				Value:  fmt.Sprintf("%.1f KiB (goroutine broadcaster %.1f, renderer %.1f)", per, basePer, perClient(r.fanoutPhase, c.Clients)),
				Target: "≤ 24 KiB", Met: verdict(per <= 24)},
			Row{Bench: "fan-out", Metric: fmt.Sprintf("poller broadcaster (%s): PUBLISH → frame, every delivery; per round to the last client; deliveries (dropped)", p.Engine),
				Value: fmt.Sprintf("p50 %s · p99 %s · max %s; p50 %s · max %s; %d / %d (%d dropped)",
					ms(p.Q.P50), ms(p.Q.P99), ms(p.Q.Max), ms(p.ToAll.P50), ms(p.ToAll.Max), p.Q.N, p.Expected, p.Dropped)},
		)
	}
	if n := r.Other; n != nil {
		other := r.OtherEngine
		rows = append(rows,
			Row{Bench: "fan-out", Metric: fmt.Sprintf("memory per client: renderer -ws-engine %s, for comparison (RSS %d → %d MiB; %.1f KiB per client after the rounds)",
				other, n.RSSBefore>>20, n.RSSConnected>>20, float64(n.RSSAfter-n.RSSBefore)/float64(c.Clients)/1024),
				Value: fmt.Sprintf("%.1f KiB (%s engine %.1f)", perClient(*n, c.Clients), r.Engine, perClient(r.fanoutPhase, c.Clients))},
			Row{Bench: "fan-out", Metric: fmt.Sprintf("renderer -ws-engine %s: XADD → frame, every delivery; per round to the last client; deliveries (dropped)", other),
				Value: fmt.Sprintf("p50 %s · p99 %s · max %s; p50 %s · max %s; %d / %d (%d dropped)",
					ms(n.Q.P50), ms(n.Q.P99), ms(n.Q.Max), ms(n.ToAll.P50), ms(n.ToAll.Max), n.Q.N, n.Expected, n.Dropped)},
		)
	}
	if n := r.Streams; n != nil {
		rows = append(rows,
			Row{Bench: "fan-out", Metric: fmt.Sprintf("memory per client: renderer -ws-engine %s, every client on the event stream (the page's fallback where websockets are blocked; RSS %d → %d MiB; %.1f KiB per client after the rounds)",
				r.Engine, n.RSSBefore>>20, n.RSSConnected>>20, float64(n.RSSAfter-n.RSSBefore)/float64(c.Clients)/1024),
				Value: fmt.Sprintf("%.1f KiB (websockets %.1f)", perClient(*n, c.Clients), perClient(r.fanoutPhase, c.Clients))},
			Row{Bench: "fan-out", Metric: "event streams: XADD → event, every delivery; per round to the last client; deliveries (dropped)",
				Value: fmt.Sprintf("p50 %s · p99 %s · max %s; p50 %s · max %s; %d / %d (%d dropped)",
					ms(n.Q.P50), ms(n.Q.P99), ms(n.Q.Max), ms(n.ToAll.P50), ms(n.ToAll.Max), n.Q.N, n.Expected, n.Dropped)},
		)
	}
	return rows
}

// contract is the delivery audit of every renderer phase.
func (r FanoutResult) contract() Audit {
	a := r.Audit
	for _, p := range []*fanoutPhase{r.Other, r.Streams} {
		if p != nil {
			a = a.plus(p.Audit)
		}
	}
	return a
}

// pollEngineNames say what each poller engine is, for the table.
var pollEngineNames = map[string]string{
	EngineNbioStd: "net/http handshake, socket handed to an nbio epoll poller",
}

// perClient is a phase's RSS growth per client, in KiB, with the clients
// connected.
func perClient(p fanoutPhase, clients int) float64 {
	return float64(p.RSSConnected-p.RSSBefore) / float64(clients) / 1024
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
