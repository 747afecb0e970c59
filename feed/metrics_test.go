package feed_test

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	_ "github.com/codemojex/feed/feed"
)

// TestMetricsRegistered: the collectors are on the default registry (the
// renderer's /metrics) under their documented names.
func TestMetricsRegistered(t *testing.T) {
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, mf := range mfs {
		have[mf.GetName()] = true
	}
	// A vector shows in Gather only once it has a child, so only the plain
	// collectors are checked here.
	for _, name := range []string{
		"codemojex_feed_acked_total", "codemojex_feed_failed_total", "codemojex_feed_claimed_total",
		"codemojex_feed_handler_panics_total", "codemojex_feed_kept_alive_total",
		"codemojex_feed_consumers_deleted_total", "codemojex_feed_handler_seconds",
	} {
		if !have[name] {
			t.Errorf("metric %s not registered", name)
		}
	}
}

// gauge returns the value of a per-game gauge, NaN when absent.
func gauge(tb testing.TB, name, game string) float64 {
	tb.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "game" && l.GetValue() == game {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return math.NaN()
}
