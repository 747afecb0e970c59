package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
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
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return histogram{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return histogram{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return histogram{}, fmt.Errorf("GET %s/metrics: %s", base, resp.Status)
	}
	var h histogram
	prefix := name + `_bucket{le="`
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		bound, count, ok := strings.Cut(line, `"} `)
		if !ok {
			continue
		}
		le, err := strconv.ParseFloat(bound, 64) // "+Inf" parses as +Inf
		if err != nil {
			return histogram{}, fmt.Errorf("%s: bucket %q: %w", name, bound, err)
		}
		n, err := strconv.ParseFloat(count, 64)
		if err != nil {
			return histogram{}, fmt.Errorf("%s: count %q: %w", name, count, err)
		}
		h.le, h.cum = append(h.le, le), append(h.cum, n)
	}
	if err := sc.Err(); err != nil {
		return histogram{}, err
	}
	if len(h.le) == 0 {
		return histogram{}, fmt.Errorf("%s: not on %s/metrics", name, base)
	}
	return h, nil
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
