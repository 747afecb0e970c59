package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/codemojex/feed/internal/gamesim"
)

// ManyGamesConfig sizes the many-games drain (issue 10, "Many games").
type ManyGamesConfig struct {
	Dir      string
	Renderer string // renderer binary
	Events   int    // events of each shape (60,000)
	Few      int    // games of the baseline shape (200)
	Many     int    // games of the spread-out shape (20,000)
	Rounds   int    // the shapes alternate this often; each keeps its best run
	Log      io.Writer
}

// ManyGamesResult is each shape's drain rate, per round.
type ManyGamesResult struct {
	Cfg       ManyGamesConfig
	Few, Many []float64 // events/s
}

// ManyGames pre-fills the same number of events as Few games and as Many
// games (gamesim, unpaced) into a fresh redis-server each time, and times
// one renderer process, with default flags but a 100ms games refresh, from
// its start until its store holds every line (then checks, untimed, that
// it acked them all). The shapes alternate Rounds times
// and each keeps its best run: a burst of other work on the machine must
// not decide the ratio.
func ManyGames(ctx context.Context, cfg ManyGamesConfig) (ManyGamesResult, error) {
	res := ManyGamesResult{Cfg: cfg}
	for round := range cfg.Rounds {
		for _, shape := range []struct {
			games int
			rates *[]float64
		}{{cfg.Few, &res.Few}, {cfg.Many, &res.Many}} {
			rate, err := drainShape(ctx, cfg, round, shape.games)
			if err != nil {
				return res, err
			}
			*shape.rates = append(*shape.rates, rate)
		}
	}
	return res, nil
}

// drainShape is one timed drain of cfg.Events events over games games.
func drainShape(ctx context.Context, cfg ManyGamesConfig, round, games int) (float64, error) {
	name := fmt.Sprintf("manygames-%d-%d", games, round)
	r, err := StartRedis(mkdir(cfg.Dir, "redis-"+name))
	if err != nil {
		return 0, err
	}
	defer r.Close()
	rdb, err := r.Client()
	if err != nil {
		return 0, err
	}
	defer rdb.Close()
	sum, err := gamesim.Run(ctx, rdb, gamesim.Config{Games: games, Events: cfg.Events / games, Seed: 1, Prefix: "mg"}, nil)
	if err != nil {
		return 0, fmt.Errorf("bench: prefill: %w", err)
	}
	total := int64(sum.Written())
	db := filepath.Join(cfg.Dir, name+".db")
	probe := newStoreProbe(db)
	defer probe.Close()
	start := time.Now()
	rend, err := StartRenderer(cfg.Renderer, RendererArgs{RedisURL: r.URL(), DB: db,
		Consumer: "mg", GamesRefresh: 100 * time.Millisecond, LogDir: cfg.Dir})
	if err != nil {
		return 0, err
	}
	defer rend.Stop()
	// Timed until the store holds every line, looked at from outside: a
	// scrape of the renderer's /metrics every 20 ms took a third of its CPU
	// in the 20,000-game shape (its per-game gauges) and next to none in
	// the 200-game one, so the look itself decided the ratio.
	took, err := probe.waitStored(ctx, rend, start, total, 3*time.Minute, cfg.Dir)
	if err != nil {
		return 0, err
	}
	// Then, untimed, that every entry was acked too and no line doubled.
	err = pollEvery(ctx, 30*time.Second, 100*time.Millisecond, "every pre-filled entry acked", func() (bool, error) {
		vs, err := scrapeValues(ctx, rend.URL(), "codemojex_feed_acked_total")
		return err == nil && vs["codemojex_feed_acked_total"] >= float64(total), nil
	})
	if err != nil {
		return 0, err
	}
	if n, err := probe.Count(ctx); err != nil || n != total {
		return 0, fmt.Errorf("bench: %d games: %d lines stored, want %d (%v)", games, n, total, err)
	}
	rate := float64(total) / took.Seconds()
	fmt.Fprintf(cfg.Log, "manygames: round %d: %d games × %d: %v, %.0f events/s\n", round+1, games, cfg.Events/games, took.Round(time.Millisecond), rate)
	return rate, nil
}

// Rows are the table's many-games figures.
func (r ManyGamesResult) Rows() []Row {
	c := r.Cfg
	few, many := slices.Max(r.Few), slices.Max(r.Many)
	ratio := many / few
	return []Row{
		{Bench: "many games", Metric: fmt.Sprintf("one renderer process drains %d events pre-filled as %d games × %d and as %d games × %d, timed from its start until its store holds every line (best of %d alternating runs each)",
			c.Events, c.Few, c.Events/c.Few, c.Many, c.Events/c.Many, c.Rounds),
			Value: fmt.Sprintf("%.0f / %.0f events/s", few, many)},
		{Bench: "many games", Metric: fmt.Sprintf("%d-game rate / %d-game rate, same run (issue 10)", c.Many, c.Few),
			Value: fmt.Sprintf("%.2f×", ratio), Target: "≥ 0.5×", Met: verdict(ratio >= 0.5)},
	}
}
