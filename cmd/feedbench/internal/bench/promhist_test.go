package bench

import (
	"context"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestScrapeHistogram reads a real client_golang histogram off its
// /metrics page twice and takes the quantiles of what came between.
func TestScrapeHistogram(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lag_seconds", Buckets: []float64{.001, .01, .1}})
	reg.MustRegister(h)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	ctx := context.Background()

	h.Observe(5) // before the window: must not count
	before, err := scrapeHistogram(ctx, srv.URL, "lag_seconds")
	if err != nil {
		t.Fatal(err)
	}
	for range 98 {
		h.Observe(.0005)
	}
	h.Observe(.05)
	h.Observe(.05)
	after, err := scrapeHistogram(ctx, srv.URL, "lag_seconds")
	if err != nil {
		t.Fatal(err)
	}
	w := after.since(before)
	if n := w.count(); n != 100 {
		t.Fatalf("count %v, want 100", n)
	}
	if q := w.quantile(.5); q != .001 {
		t.Errorf("p50 bound %v, want 0.001", q)
	}
	if q := w.quantile(.99); q != .1 {
		t.Errorf("p99 bound %v, want 0.1", q)
	}
	if _, err := scrapeHistogram(ctx, srv.URL, "absent_seconds"); err == nil {
		t.Error("a histogram the page does not have scraped without error")
	}
}

// TestScrapeGarbage reads the Go runtime's allocation and GC counters off a
// real client_golang page with its Go collector, and they move with a GC;
// and the store's commits, the count of its batch histogram.
func TestScrapeGarbage(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	commits := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "codemojex_store_upsert_batch_seconds"})
	reg.MustRegister(commits)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	ctx := context.Background()

	before, err := scrapeGarbage(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	sink = make([]byte, 1<<20)
	runtime.GC()
	commits.Observe(.001)
	commits.Observe(.002)
	after, err := scrapeGarbage(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if d := after.Bytes - before.Bytes; d < 1<<20 {
		t.Errorf("allocated %v bytes between the scrapes, want ≥ 1 MiB", d)
	}
	if d := after.Cycles - before.Cycles; d < 1 {
		t.Errorf("%v GC cycles between the scrapes, want ≥ 1", d)
	}
	if d := after.Commits - before.Commits; d != 2 {
		t.Errorf("%v commits between the scrapes, want 2", d)
	}
	if _, err := scrapeValues(ctx, srv.URL, "absent_total"); err == nil {
		t.Error("a value the page does not have scraped without error")
	}
}

var sink []byte
