package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// histogram is one Prometheus histogram as a /metrics page shows it: the
// cumulative count of each bucket, by upper bound, ascending.
type histogram struct {
	le  []float64
	cum []float64
}

// scrapeHistogram reads histogram name (one without labels of its own)
// from the /metrics page at base.
func scrapeHistogram(ctx context.Context, base, name string) (histogram, error) {
	var h histogram
	prefix := name + `_bucket{le="`
	err := scrapeLines(ctx, base, func(text string) error {
		line, ok := strings.CutPrefix(text, prefix)
		if !ok {
			return nil
		}
		bound, count, ok := strings.Cut(line, `"} `)
		if !ok {
			return nil
		}
		le, err := strconv.ParseFloat(bound, 64) // "+Inf" parses as +Inf
		if err != nil {
			return fmt.Errorf("%s: bucket %q: %w", name, bound, err)
		}
		n, err := strconv.ParseFloat(count, 64)
		if err != nil {
			return fmt.Errorf("%s: count %q: %w", name, count, err)
		}
		h.le, h.cum = append(h.le, le), append(h.cum, n)
		return nil
	})
	if err != nil {
		return histogram{}, err
	}
	if len(h.le) == 0 {
		return histogram{}, fmt.Errorf("%s: not on %s/metrics", name, base)
	}
	return h, nil
}

// scrapeValues reads the samples of names, metrics without labels, from the
// /metrics page at base; each must be there.
func scrapeValues(ctx context.Context, base string, names ...string) (map[string]float64, error) {
	vs := make(map[string]float64, len(names))
	err := scrapeLines(ctx, base, func(text string) error {
		name, value, ok := strings.Cut(text, " ")
		if !ok || !slices.Contains(names, name) {
			return nil
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("%s: value %q: %w", name, value, err)
		}
		vs[name] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := vs[n]; !ok {
			return nil, fmt.Errorf("%s: not on %s/metrics", n, base)
		}
	}
	return vs, nil
}

// scrapeLines calls fn with each line of the /metrics page at base.
func scrapeLines(ctx context.Context, base string, fn func(string) error) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/metrics: %s", base, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if err := fn(sc.Text()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// since is what was observed between o and h, two scrapes of one
// histogram.
func (h histogram) since(o histogram) histogram {
	d := histogram{le: h.le, cum: make([]float64, len(h.cum))}
	for i := range h.cum {
		d.cum[i] = h.cum[i]
		if i < len(o.cum) && o.le[i] == h.le[i] {
			d.cum[i] -= o.cum[i]
		}
	}
	return d
}

// plus is h and o counted together: two windows of one histogram.
func (h histogram) plus(o histogram) histogram {
	switch {
	case len(o.cum) == 0:
		return h
	case len(h.cum) == 0:
		return o
	case !slices.Equal(h.le, o.le):
		return h // another renderer's buckets: not comparable
	}
	d := histogram{le: h.le, cum: make([]float64, len(h.cum))}
	for i := range h.cum {
		d.cum[i] = h.cum[i] + o.cum[i]
	}
	return d
}

// count is the number of observations.
func (h histogram) count() float64 {
	if len(h.cum) == 0 {
		return 0
	}
	return h.cum[len(h.cum)-1]
}

// quantile is the upper bound of the bucket that holds quantile q: the
// true value is at most this (+Inf past the last finite bucket).
func (h histogram) quantile(q float64) float64 {
	n := h.count()
	if n == 0 {
		return math.NaN()
	}
	for i, c := range h.cum {
		if c >= q*n {
			return h.le[i]
		}
	}
	return math.Inf(1)
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
