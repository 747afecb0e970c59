package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/gamesim"
)

// IdleConfig sizes the idle benchmark.
type IdleConfig struct {
	Dir      string
	Renderer string // renderer binary
	Few      int    // the baseline's games (200)
	Many     int    // the quiet crowd (100,000)
	// Quiet is how long to wait after the drain before measuring: the
	// renderer's -active-window (10 s by default) plus a margin, so that
	// every game has left the read set.
	Quiet  time.Duration
	Window time.Duration // CPU is measured over this long
	Log    io.Writer
}

// IdleCase is the CPU one renderer and its Redis used over the window.
type IdleCase struct {
	Games           int
	Renderer, Redis time.Duration
}

// Total is the renderer's and Redis's CPU together.
func (c IdleCase) Total() time.Duration { return c.Renderer + c.Redis }

// IdleResult compares the idle cost of Many quiet games with Few.
type IdleResult struct {
	Cfg       IdleConfig
	Few, Many IdleCase
}

// Idle measures, for Few and then Many games, each with one entry that a
// renderer process has consumed, the CPU the renderer and redis-server use
// over Window once Quiet has passed since the drain: what history costs
// when nothing happens.
func Idle(ctx context.Context, cfg IdleConfig) (IdleResult, error) {
	res := IdleResult{Cfg: cfg}
	var err error
	if res.Few, err = idleCase(ctx, cfg, cfg.Few); err != nil {
		return res, err
	}
	res.Many, err = idleCase(ctx, cfg, cfg.Many)
	return res, err
}

func idleCase(ctx context.Context, cfg IdleConfig, games int) (IdleCase, error) {
	ic := IdleCase{Games: games}
	name := fmt.Sprintf("idle-%d", games)
	r, err := StartRedis(mkdir(cfg.Dir, "redis-"+name))
	if err != nil {
		return ic, err
	}
	defer r.Close()
	rdb, err := r.Client()
	if err != nil {
		return ic, err
	}
	defer rdb.Close()
	start := time.Now()
	sum, err := gamesim.Run(ctx, rdb, gamesim.Config{Games: games, Events: 1, Seed: 1, Prefix: "idle"}, nil)
	if err != nil {
		return ic, fmt.Errorf("bench: prefill: %w", err)
	}
	keys := make([]string, 0, len(sum.Games))
	for _, g := range sum.Games {
		keys = append(keys, g.Stream)
	}
	fmt.Fprintf(cfg.Log, "idle: %d games registered with one entry each in %v\n", games, time.Since(start).Round(time.Millisecond))
	rend, err := StartRenderer(cfg.Renderer, RendererArgs{RedisURL: r.URL(), DB: filepath.Join(cfg.Dir, name+".db"),
		Consumer: name, LogDir: cfg.Dir})
	if err != nil {
		return ic, err
	}
	defer rend.Stop()
	start = time.Now()
	if err := pollEvery(ctx, 5*time.Minute, time.Second, "every entry consumed", func() (bool, error) {
		if rend.Exited() {
			return false, fmt.Errorf("bench: renderer %s exited (see %s)", name, cfg.Dir)
		}
		return Drained(ctx, rdb, "feed", keys)
	}); err != nil {
		return ic, err
	}
	fmt.Fprintf(cfg.Log, "idle: %d games consumed in %v; quiet for %v, then measuring %v\n",
		games, time.Since(start).Round(time.Millisecond), cfg.Quiet, cfg.Window)
	// Waiting out the renderer's active window is the point of the
	// benchmark, not a synchronisation: nothing is written meanwhile.
	select {
	case <-ctx.Done():
		return ic, ctx.Err()
	case <-time.After(cfg.Quiet):
	}
	calls0 := commandCalls(ctx, rdb)
	rend0, redis0 := mustCPU(rend.Pid()), mustCPU(r.Pid())
	select {
	case <-ctx.Done():
		return ic, ctx.Err()
	case <-time.After(cfg.Window):
	}
	if rend.Exited() {
		return ic, fmt.Errorf("bench: renderer %s exited while idle", name)
	}
	ic.Renderer, ic.Redis = mustCPU(rend.Pid())-rend0, mustCPU(r.Pid())-redis0
	fmt.Fprintf(cfg.Log, "idle: %d games: renderer %v, redis %v of CPU over %v; commands: %s\n",
		games, ic.Renderer, ic.Redis, cfg.Window, callsSince(calls0, commandCalls(ctx, rdb)))
	return ic, nil
}

// Rows are the table's idle figures. The target is issue 10's: the many
// games cost at most 3× the few, plus 2% of a core.
func (r IdleResult) Rows() []Row {
	w := r.Cfg.Window
	limit := 3*r.Few.Total() + time.Duration(0.02*float64(w))
	pct := func(d time.Duration) string { return fmt.Sprintf("%.1f%%", 100*d.Seconds()/w.Seconds()) }
	ratio := "—"
	if r.Few.Total() > 0 {
		ratio = fmt.Sprintf("%.1f×", r.Many.Total().Seconds()/r.Few.Total().Seconds())
	}
	return []Row{
		{Bench: "idle", Metric: fmt.Sprintf("CPU of renderer + redis-server over %v of quiet, %d games (one consumed entry each, single node)", w, r.Few.Games),
			Value: fmt.Sprintf("%v + %v (%s of a core)", r.Few.Renderer, r.Few.Redis, pct(r.Few.Total()))},
		{Bench: "idle", Metric: fmt.Sprintf("the same with %d quiet games (%s the %d-game figure)", r.Many.Games, ratio, r.Few.Games),
			Value:  fmt.Sprintf("%v + %v (%s of a core)", r.Many.Renderer, r.Many.Redis, pct(r.Many.Total())),
			Target: fmt.Sprintf("≤ 3× the %d-game figure + 2%% of a core (%v)", r.Few.Games, limit), Met: verdict(r.Many.Total() <= limit)},
	}
}

// commandCalls returns the calls of each command so far (INFO
// commandstats), so that the log can say what the quiet window cost.
func commandCalls(ctx context.Context, rdb redis.UniversalClient) map[string]int64 {
	out := map[string]int64{}
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return out
	}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		out[strings.TrimPrefix(name, "cmdstat_")], _ = strconv.ParseInt(n, 10, 64)
	}
	return out
}

// callsSince formats the commands called between two commandCalls, most
// called first ("-" when none; INFO itself is counted).
func callsSince(before, after map[string]int64) string {
	var parts []string
	for name, n := range after {
		if d := n - before[name]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", name, d))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	slices.SortFunc(parts, func(a, b string) int {
		na, _ := strconv.Atoi(a[strings.LastIndexByte(a, ' ')+1:])
		nb, _ := strconv.Atoi(b[strings.LastIndexByte(b, ' ')+1:])
		return nb - na
	})
	return strings.Join(parts, ", ")
}
