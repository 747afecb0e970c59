package bench

import (
	"fmt"
	"math"
	"strings"
	"time"
)

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
		auditRow("latency", "the renderer's rounds"+r.compressedNote(), r.contract()),
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

// contract is the delivery audit of every renderer round, the
// compressing clients' included.
func (r LatencyResult) contract() Audit {
	if r.Compressed == nil {
		return r.Audit
	}
	return r.Audit.plus(r.Compressed.Audit)
}

// compressedNote names the compressing clients' round in the audit's row
// when there was one.
func (r LatencyResult) compressedNote() string {
	if r.Compressed == nil {
		return ""
	}
	return " (the compressing clients' included)"
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
