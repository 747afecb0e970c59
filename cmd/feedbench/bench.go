package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/codemojex/feed/cmd/feedbench/internal/bench"
)

// options are feedbench's flags.
type options struct {
	quick      bool
	only       string
	write      string
	dir        string
	renderer   string
	cpuprofile string
	inproc     bool
	rowsJSON   bool
	profileDir string

	tpEvents, tpGames, tpRounds int

	latRate, latGames, latClients int
	latDuration                   time.Duration
	latRounds, latPrefill         int
	latCompressed                 bool

	fanClients, fanGames, fanRounds int

	recPending           int
	recMinIdle, recClaim time.Duration

	clGames, clEvents, clClients int
	clDuration                   time.Duration
	idleGames, idleFew           int
	idleWindow                   time.Duration
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("feedbench", flag.ContinueOnError)
	fs.BoolVar(&o.quick, "quick", false, "a smaller, faster run (sizes below are divided down unless set explicitly)")
	fs.StringVar(&o.only, "only", "throughput,latency,fanout,recovery,cluster,idle,manygames", "benchmarks to run, comma-separated")
	fs.StringVar(&o.write, "write", "", "also write the table and this command to this Markdown file")
	fs.StringVar(&o.dir, "dir", "", "scratch directory (default: a new temporary directory, removed at the end)")
	fs.StringVar(&o.renderer, "renderer", "", "renderer binary (default: go build ./cmd/renderer into the scratch directory)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the first full-pipeline throughput round here")
	fs.BoolVar(&o.rowsJSON, "rows-json", false, "print the rows of one benchmark as JSON (how feedbench runs each benchmark in a fresh process)")
	fs.BoolVar(&o.inproc, "inproc", false, "latency and fan-out: wire the renderer in this process instead of running the binary (for profiling)")
	fs.StringVar(&o.profileDir, "profile", "", "write latency.cpu.prof, latency-deliveries.csv, fanout.cpu.prof and fanout.heap.prof here (implies -inproc)")
	fs.IntVar(&o.tpEvents, "throughput-events", 200000, "throughput: events pre-filled over all games")
	fs.IntVar(&o.tpGames, "throughput-games", 20, "throughput: games (streams)")
	fs.IntVar(&o.tpRounds, "throughput-rounds", 3, "throughput: interleaved raw and pipeline rounds")
	fs.IntVar(&o.latRate, "latency-rate", 1000, "latency: events per second over all games")
	fs.IntVar(&o.latGames, "latency-games", 100, "latency: games")
	fs.IntVar(&o.latClients, "latency-clients", 1000, "latency: websocket clients spread over the games")
	fs.DurationVar(&o.latDuration, "latency-duration", 20*time.Second, "latency: measured writing time of the renderer, and of the baseline")
	fs.IntVar(&o.latRounds, "latency-rounds", 2, "latency: rounds of each server, interleaved renderer, baseline, baseline, renderer, … (each of -latency-duration / rounds)")
	fs.IntVar(&o.latPrefill, "latency-prefill", 60000, "latency: lines the renderer stores, in as many other games as -latency-games that no client watches, before the rounds: a store grown as a deployed one is (0: an empty store, whose first round is faster than the rest)")
	fs.BoolVar(&o.latCompressed, "latency-compressed", true, "latency: one more renderer round, after the others, whose clients offer permessage-deflate as browsers do (reported apart from the targets)")
	fs.IntVar(&o.fanClients, "fanout-clients", 10000, "fan-out: websocket clients (in a separate process)")
	fs.IntVar(&o.fanGames, "fanout-games", 100, "fan-out: games the clients are spread over")
	fs.IntVar(&o.fanRounds, "fanout-rounds", 10, "fan-out: rounds of one line to every game")
	fs.IntVar(&o.recPending, "recovery-pending", 20000, "recovery: entries in the pending list to drain")
	fs.DurationVar(&o.recMinIdle, "recovery-min-idle", 3*time.Second, "recovery: the renderers' -min-idle")
	fs.DurationVar(&o.recClaim, "recovery-claim-every", time.Second, "recovery: the renderers' -claim-every")
	fs.IntVar(&o.clGames, "cluster-games", 10000, "cluster: games pre-filled on the single node and on the 3-master cluster")
	fs.IntVar(&o.clEvents, "cluster-events", 3, "cluster: events per game")
	fs.IntVar(&o.clClients, "cluster-clients", 200, "cluster: websocket clients of the latency part")
	fs.DurationVar(&o.clDuration, "cluster-duration", 10*time.Second, "cluster: measured writing time of the latency part, at -latency-rate")
	fs.IntVar(&o.idleGames, "idle-games", 100000, "idle: quiet games")
	fs.IntVar(&o.idleFew, "idle-few", 200, "idle: the baseline's quiet games")
	fs.DurationVar(&o.idleWindow, "idle-window", 10*time.Second, "idle: CPU is measured over this long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.profileDir != "" {
		o.inproc = true
	}
	if o.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quick := func(name string, p *int, v int) {
			if !set[name] {
				*p = v
			}
		}
		quick("throughput-events", &o.tpEvents, 50000)
		quick("throughput-rounds", &o.tpRounds, 1)
		quick("fanout-clients", &o.fanClients, 2000)
		quick("fanout-rounds", &o.fanRounds, 5)
		quick("recovery-pending", &o.recPending, 5000)
		quick("cluster-games", &o.clGames, 2000)
		quick("idle-games", &o.idleGames, 20000)
		if !set["cluster-duration"] {
			o.clDuration = 5 * time.Second
		}
		if !set["latency-duration"] {
			o.latDuration = 5 * time.Second
		}
		quick("latency-prefill", &o.latPrefill, 10000)
	}
	return o, nil
}

func runBench(ctx context.Context, args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := raiseFileLimit(); err != nil {
		return err
	}
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "feedbench-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.dir)
	}
	only := map[string]bool{}
	for _, b := range strings.Split(o.only, ",") {
		only[strings.TrimSpace(b)] = true
	}
	var names []string
	for _, n := range benchNames {
		if only[n] {
			names = append(names, n)
		}
	}
	needRenderer := only["recovery"] || only["cluster"] || only["idle"] || (!o.inproc && (only["latency"] || only["fanout"]))
	if needRenderer && o.renderer == "" {
		if o.renderer, err = buildRenderer(ctx, o.dir); err != nil {
			return err
		}
	}
	if o.rowsJSON {
		if len(names) != 1 {
			return fmt.Errorf("-rows-json runs one benchmark, not %q", o.only)
		}
		rows, err := runOne(ctx, o, names[0])
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(rows)
	}
	m := bench.ThisMachine()
	m.Command = strings.Join(os.Args, " ")
	m.Redis = redisVersion()
	var rows []bench.Row
	for _, name := range names {
		var r []bench.Row
		if len(names) == 1 {
			r, err = runOne(ctx, o, name)
		} else {
			r, err = runChild(ctx, o, args, name)
		}
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	m.LoadEnd = bench.LoadAvg()
	var buf bytes.Buffer
	bench.WriteTable(&buf, m, rows)
	os.Stdout.Write(buf.Bytes())
	if o.write != "" {
		if err := bench.WriteDoc(o.write, m.Command, buf.Bytes()); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "feedbench: wrote %s\n", o.write)
	}
	return nil
}

// benchNames are the benchmarks in the order they run.
var benchNames = []string{"throughput", "latency", "fanout", "recovery", "cluster", "idle", "manygames"}

// runChild runs one benchmark in a fresh feedbench process, so that what
// an earlier benchmark left in this process (a grown heap, caches, GC work)
// cannot slow a later one, and returns its rows.
func runChild(ctx context.Context, o *options, args []string, name string) ([]bench.Row, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var child []string
	skip := map[string]bool{"-write": true, "-only": true, "-renderer": true, "-dir": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		key, _, hasValue := strings.Cut(strings.Replace(a, "--", "-", 1), "=")
		if skip[key] {
			if !hasValue {
				i++ // its value is the next argument
			}
			continue
		}
		child = append(child, a)
	}
	child = append(child, "-only", name, "-rows-json", "-dir", o.dir)
	if o.renderer != "" {
		child = append(child, "-renderer", o.renderer)
	}
	cmd := exec.CommandContext(ctx, self, child...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var rows []bench.Row
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("%s: rows: %w", name, err)
	}
	return rows, nil
}

// runOne runs one benchmark in this process.
func runOne(ctx context.Context, o *options, name string) ([]bench.Row, error) {
	logw := os.Stderr
	renderer := o.renderer
	if o.inproc {
		renderer = "" // in this process
	}
	profile := func(name string) string {
		if o.profileDir == "" {
			return ""
		}
		return filepath.Join(o.profileDir, name)
	}
	switch name {
	case "throughput":
		res, err := bench.Throughput(ctx, bench.ThroughputConfig{
			Dir: o.dir, Games: o.tpGames, Events: o.tpEvents, Rounds: o.tpRounds, Count: 100,
			CPUProfile: o.cpuprofile, Log: logw,
		})
		if err != nil {
			return nil, fmt.Errorf("throughput: %w", err)
		}
		return res.Rows(), nil
	case "latency":
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		res, err := bench.Latency(ctx, bench.LatencyConfig{Self: self,
			Dir: o.dir, Renderer: renderer, Games: o.latGames, Clients: o.latClients,
			Rate: float64(o.latRate), Warmup: 2 * time.Second, Duration: o.latDuration, Rounds: o.latRounds, Log: logw,
			CPUProfile: profile("latency.cpu.prof"), Dump: profile("latency-deliveries.csv"), Compressed: o.latCompressed,
			Prefill: o.latPrefill,
		})
		if err != nil {
			return nil, fmt.Errorf("latency: %w", err)
		}
		return res.Rows(), nil
	case "fanout":
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		res, err := bench.Fanout(ctx, bench.FanoutConfig{
			Dir: o.dir, Renderer: renderer, Self: self, Games: o.fanGames, Clients: o.fanClients,
			Rounds: o.fanRounds, Every: 500 * time.Millisecond, Log: logw, Baseline: true,
			PollEngines: []string{bench.EngineNbioStd}, RendererOther: true, Streams: true,
			HeapProfile: profile("fanout.heap.prof"), CPUProfile: profile("fanout.cpu.prof"),
		})
		if err != nil {
			return nil, fmt.Errorf("fanout: %w", err)
		}
		return res.Rows(), nil
	case "recovery":
		res, err := bench.Recovery(ctx, bench.RecoveryConfig{
			Dir: o.dir, Renderer: o.renderer, Games: 20, Pending: o.recPending,
			MinIdle: o.recMinIdle, ClaimEvery: o.recClaim, Log: logw,
		})
		if err != nil {
			return nil, fmt.Errorf("recovery: %w", err)
		}
		return res.Rows(), nil
	case "cluster":
		res, err := bench.Cluster(ctx, bench.ClusterConfig{
			Dir: o.dir, Renderer: o.renderer, Games: o.clGames, Events: o.clEvents,
			Rate: float64(o.latRate), LatGames: 100, Clients: o.clClients,
			Warmup: 2 * time.Second, Duration: o.clDuration, Log: logw,
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		return res.Rows(), nil
	case "idle":
		res, err := bench.Idle(ctx, bench.IdleConfig{
			Dir: o.dir, Renderer: o.renderer, Few: o.idleFew, Many: o.idleGames,
			Quiet: 12 * time.Second, Window: o.idleWindow, Log: logw,
		})
		if err != nil {
			return nil, fmt.Errorf("idle: %w", err)
		}
		return res.Rows(), nil
	case "manygames":
		rounds := 3
		if o.quick {
			rounds = 1
		}
		res, err := bench.ManyGames(ctx, bench.ManyGamesConfig{
			Dir: o.dir, Renderer: o.renderer, Events: 60000, Few: 200, Many: 20000, Rounds: rounds, Log: logw,
		})
		if err != nil {
			return nil, fmt.Errorf("manygames: %w", err)
		}
		return res.Rows(), nil
	}
	return nil, fmt.Errorf("unknown benchmark %q (want %s)", name, strings.Join(benchNames, ", "))
}

// buildRenderer builds ./cmd/renderer (from the module the working
// directory is in) into dir.
func buildRenderer(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "renderer")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/renderer")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/renderer (run feedbench from the module root, or pass -renderer): %w", err)
	}
	return out, nil
}

func redisVersion() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "redis unknown"
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return "redis " + v
		}
	}
	return strings.TrimSpace(string(out))
}
