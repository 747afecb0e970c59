package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/codemojex/feed/internal/bench"
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
	profileDir string

	tpEvents, tpGames, tpRounds int

	latRate, latGames, latClients int
	latDuration                   time.Duration

	fanClients, fanGames, fanRounds int

	recPending           int
	recMinIdle, recClaim time.Duration
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("feedbench", flag.ContinueOnError)
	fs.BoolVar(&o.quick, "quick", false, "a smaller, faster run (sizes below are divided down unless set explicitly)")
	fs.StringVar(&o.only, "only", "throughput,latency,fanout,recovery", "benchmarks to run, comma-separated")
	fs.StringVar(&o.write, "write", "", "also write the table and this command to this Markdown file")
	fs.StringVar(&o.dir, "dir", "", "scratch directory (default: a new temporary directory, removed at the end)")
	fs.StringVar(&o.renderer, "renderer", "", "renderer binary (default: go build ./cmd/renderer into the scratch directory)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the first full-pipeline throughput round here")
	fs.BoolVar(&o.inproc, "inproc", false, "latency and fan-out: wire the renderer in this process instead of running the binary (for profiling)")
	fs.StringVar(&o.profileDir, "profile", "", "write latency.cpu.prof and fanout.heap.prof here (implies -inproc)")
	fs.IntVar(&o.tpEvents, "throughput-events", 200000, "throughput: events pre-filled over all games")
	fs.IntVar(&o.tpGames, "throughput-games", 20, "throughput: games (streams)")
	fs.IntVar(&o.tpRounds, "throughput-rounds", 3, "throughput: interleaved raw and pipeline rounds")
	fs.IntVar(&o.latRate, "latency-rate", 1000, "latency: events per second over all games")
	fs.IntVar(&o.latGames, "latency-games", 100, "latency: games")
	fs.IntVar(&o.latClients, "latency-clients", 1000, "latency: websocket clients spread over the games")
	fs.DurationVar(&o.latDuration, "latency-duration", 20*time.Second, "latency: measured writing time")
	fs.IntVar(&o.fanClients, "fanout-clients", 10000, "fan-out: websocket clients (in a separate process)")
	fs.IntVar(&o.fanGames, "fanout-games", 100, "fan-out: games the clients are spread over")
	fs.IntVar(&o.fanRounds, "fanout-rounds", 10, "fan-out: rounds of one line to every game")
	fs.IntVar(&o.recPending, "recovery-pending", 20000, "recovery: entries in the pending list to drain")
	fs.DurationVar(&o.recMinIdle, "recovery-min-idle", 3*time.Second, "recovery: the renderers' -min-idle")
	fs.DurationVar(&o.recClaim, "recovery-claim-every", time.Second, "recovery: the renderers' -claim-every")
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
		if !set["latency-duration"] {
			o.latDuration = 5 * time.Second
		}
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
	needRenderer := only["recovery"] || (!o.inproc && (only["latency"] || only["fanout"]))
	if needRenderer && o.renderer == "" {
		if o.renderer, err = buildRenderer(ctx, o.dir); err != nil {
			return err
		}
	}
	m := bench.ThisMachine()
	m.Command = strings.Join(os.Args, " ")
	m.Redis = redisVersion()
	logw := os.Stderr
	var rows []bench.Row
	var notes []string
	if only["throughput"] {
		res, err := bench.Throughput(ctx, bench.ThroughputConfig{
			Dir: o.dir, Games: o.tpGames, Events: o.tpEvents, Rounds: o.tpRounds, Count: 100,
			CPUProfile: o.cpuprofile, Log: logw,
		})
		if err != nil {
			return fmt.Errorf("throughput: %w", err)
		}
		rows = append(rows, res.Rows()...)
	}
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
	if only["latency"] {
		res, err := bench.Latency(ctx, bench.LatencyConfig{
			Dir: o.dir, Renderer: renderer, CPUProfile: profile("latency.cpu.prof"), Dump: profile("latency-deliveries.csv"), Games: o.latGames, Clients: o.latClients,
			Rate: float64(o.latRate), Warmup: 2 * time.Second, Duration: o.latDuration, Log: logw,
		})
		if err != nil {
			return fmt.Errorf("latency: %w", err)
		}
		rows = append(rows, res.Rows()...)
	}
	if only["fanout"] {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		res, err := bench.Fanout(ctx, bench.FanoutConfig{
			Dir: o.dir, Renderer: renderer, Self: self, HeapProfile: profile("fanout.heap.prof"), CPUProfile: profile("fanout.cpu.prof"), Games: o.fanGames, Clients: o.fanClients,
			Rounds: o.fanRounds, Every: 500 * time.Millisecond, Log: logw,
		})
		if err != nil {
			return fmt.Errorf("fanout: %w", err)
		}
		rows = append(rows, res.Rows()...)
	}
	if only["recovery"] {
		res, err := bench.Recovery(ctx, bench.RecoveryConfig{
			Dir: o.dir, Renderer: o.renderer, Games: 20, Pending: o.recPending,
			MinIdle: o.recMinIdle, ClaimEvery: o.recClaim, Log: logw,
		})
		if err != nil {
			return fmt.Errorf("recovery: %w", err)
		}
		rows = append(rows, res.Rows()...)
	}
	_ = notes
	m.LoadEnd = bench.LoadAvg()
	var buf bytes.Buffer
	bench.WriteTable(&buf, m, rows)
	os.Stdout.Write(buf.Bytes())
	if o.write != "" {
		return writeDoc(o.write, m, buf.Bytes())
	}
	return nil
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

// writeDoc replaces the generated part of the Markdown file (between the
// markers) with the table and the command, keeping the hand-written rest.
func writeDoc(path string, m bench.Machine, table []byte) error {
	const begin, end = "<!-- feedbench:begin -->", "<!-- feedbench:end -->"
	var gen bytes.Buffer
	fmt.Fprintln(&gen, begin)
	fmt.Fprintf(&gen, "Produced by:\n\n```\n%s\n```\n\n", m.Command)
	gen.Write(table)
	fmt.Fprintln(&gen, end)
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	s := string(old)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	var doc string
	if i >= 0 && j > i {
		doc = s[:i] + gen.String() + s[j+len(end)+1:]
	} else {
		doc = "# Benchmarks\n\n" + gen.String()
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "feedbench: wrote %s\n", path)
	return nil
}

var _ io.Writer = os.Stderr
