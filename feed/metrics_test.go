package feed_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
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

// counter returns the sum of a counter's series on the default registry
// (the renderer's /metrics) whose labels include want.
func counter(tb testing.TB, name string, want map[string]string) float64 {
	tb.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
					continue series
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// TestMetricsCountOnce: a counter on /metrics is the sum of the consumers'
// Stats, counted once, and stays put when the consumers close.
func TestMetricsCountOnce(t *testing.T) {
	_, rdb := mustStart(t)
	s1, s2 := stream("count-once-1"), stream("count-once-2")

	type check struct {
		name   string
		labels map[string]string
		stat   func(feed.Stats) int64
	}
	checks := []check{
		{"codemojex_feed_delivered_total", nil, func(s feed.Stats) int64 { return s.Delivered }},
		{"codemojex_feed_delivered_total", map[string]string{"path": "new"}, func(s feed.Stats) int64 { return s.Delivered - s.Recovered - s.Claimed }},
		{"codemojex_feed_acked_total", nil, func(s feed.Stats) int64 { return s.Acked }},
		{"codemojex_feed_dead_total", nil, func(s feed.Stats) int64 { return s.Dead }},
		{"codemojex_feed_dead_total", map[string]string{"reason": "malformed"}, func(s feed.Stats) int64 { return s.Dead }},
		{"codemojex_feed_groups_created_total", map[string]string{"cause": "new"}, func(s feed.Stats) int64 { return s.GroupsCreated - s.GroupsRecreated }},
	}
	// Earlier tests' consumers are closed: their counts are in the
	// baseline and must not move.
	base := make([]float64, len(checks))
	for i, ch := range checks {
		base[i] = counter(t, ch.name, ch.labels)
	}

	var rec1, rec2 recorder
	cfg1 := baseConfig(t, rdb, "count-once-a", s1)
	cfg1.Handler = rec1.handler
	cfg2 := baseConfig(t, rdb, "count-once-b", s2)
	cfg2.Handler = rec2.handler
	c1, c2 := mustOpen(t, cfg1), mustOpen(t, cfg2)
	for range 3 {
		add(t, rdb, s1)
	}
	add(t, rdb, s2)
	addRaw(t, rdb, s2, "kind", "chat") // no id: malformed, dead-lettered
	waitFor(t, 10*time.Second, "entries settled", func() bool {
		a, b := c1.Stats(), c2.Stats()
		return a.Acked == 3 && b.Acked == 1 && b.Dead == 1
	})
	st1, st2 := c1.Stats(), c2.Stats()

	want := func(step string) {
		t.Helper()
		for i, ch := range checks {
			got := counter(t, ch.name, ch.labels) - base[i]
			if w := float64(ch.stat(st1) + ch.stat(st2)); got != w {
				t.Errorf("%s: %s%v = %v over the baseline, want the Stats sum %v", step, ch.name, ch.labels, got, w)
			}
		}
	}
	want("both open")
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	want("one closed")
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	want("both closed")
	// The read-set gauges may move until Close; the counters may not.
	if st := c1.Stats(); st.Delivered != st1.Delivered || st.Acked != st1.Acked {
		t.Errorf("Stats of an idle consumer changed on Close: %+v, was %+v", st, st1)
	}
}

// readLag returns the read-lag histogram's sample count and how many
// samples lie at or below le seconds.
func readLag(tb testing.TB, le float64) (count, below uint64) {
	tb.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "codemojex_feed_read_lag_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == le {
				below = b.GetCumulativeCount()
			}
		}
		return h.GetSampleCount(), below
	}
	tb.Fatal("codemojex_feed_read_lag_seconds not registered")
	return 0, 0
}

// TestReadLagMetric: each new entry read is observed once, by the age of
// its stream id when the read delivered it: an entry added with an id two
// minutes old lands past the last bucket, a fresh one well inside.
func TestReadLagMetric(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("read-lag")
	var rec recorder
	cfg := baseConfig(t, rdb, "read-lag", s)
	cfg.Handler = rec.handler
	mustOpen(t, cfg)
	count0, below0 := readLag(t, 60)

	old := fmt.Sprintf("%d-1", time.Now().Add(-2*time.Minute).UnixMilli())
	err := rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: s, ID: old, Values: []any{
		"id", minter.Next(time.Now()), "kind", "chat", "player", "ana", "text", "late"}}).Err()
	if err != nil {
		t.Fatal(err)
	}
	add(t, rdb, s)
	waitFor(t, 10*time.Second, "both entries handled", func() bool { return len(rec.all()) == 2 })

	count, below := readLag(t, 60)
	if count-count0 != 2 || below-below0 != 1 {
		t.Errorf("read lag: %d samples, %d of them at most 60 s; want 2 and 1", count-count0, below-below0)
	}
}

// TestForgottenStreamLeavesNoGauge: a stream the consumer stops following
// (here dropped from the static list; also a game gone from the registry,
// or a deleted stream) takes its pending and lag labels with it, or
// /metrics would report its last figures for good.
func TestForgottenStreamLeavesNoGauge(t *testing.T) {
	_, rdb := mustStart(t)
	game := "gauge-gone"
	s := stream(game)
	add(t, rdb, s)
	var listed atomic.Bool
	listed.Store(true)
	cfg := baseConfig(t, rdb, "c1")
	cfg.Streams = func(context.Context) ([]string, error) {
		if listed.Load() {
			return []string{s}, nil
		}
		return nil, nil
	}
	cfg.MinIdle = time.Hour // nothing is claimed back: the entry stays pending
	cfg.Handler = func(context.Context, feed.Message) error { return errors.New("not now") }
	mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "the pending gauge of "+game, func() bool {
		return gauge(t, "codemojex_feed_pending", game) == 1
	})
	listed.Store(false)
	waitFor(t, 10*time.Second, "the gauges of the unlisted stream gone", func() bool {
		return math.IsNaN(gauge(t, "codemojex_feed_pending", game)) && math.IsNaN(gauge(t, "codemojex_feed_lag", game))
	})
}

// plainGauge returns the value of a gauge without labels.
func plainGauge(tb testing.TB, name string) float64 {
	tb.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return math.NaN()
}

// TestClosedConsumerLeavesNoGauge: a consumer closed while the process
// goes on (the renderer closes it when its store file is deleted, and
// serves /metrics until restarted) takes its gauges with it: its games'
// pending and lag labels, and the pause it was in. They stayed with the
// values of the moment it closed, for good: a lag frozen while nothing
// consumed, a pause that no longer was one.
func TestClosedConsumerLeavesNoGauge(t *testing.T) {
	_, rdb := mustStart(t)
	stuck, held := "gauge-closed", "gauge-closed-paused"
	add(t, rdb, stream(stuck))
	cfg := baseConfig(t, rdb, "c1", stream(stuck))
	cfg.MinIdle = time.Hour // nothing is claimed back: the entry stays pending
	cfg.Handler = func(context.Context, feed.Message) error { return errors.New("not now") }
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "the pending gauge of "+stuck, func() bool {
		return gauge(t, "codemojex_feed_pending", stuck) == 1
	})

	add(t, rdb, stream(held))
	cfg2 := baseConfig(t, rdb, "c2", stream(held))
	cfg2.Handler = func(context.Context, feed.Message) error { return feed.Unavailable(errors.New("disk full")) }
	c2 := mustOpen(t, cfg2)
	waitFor(t, 10*time.Second, "the pause", func() bool {
		return c2.Paused() != nil && plainGauge(t, "codemojex_feed_paused") == 1
	})
	c.Close()
	c2.Close()
	if v := gauge(t, "codemojex_feed_pending", stuck); !math.IsNaN(v) {
		t.Errorf("codemojex_feed_pending{game=%q} = %v after Close, want no series", stuck, v)
	}
	if v := gauge(t, "codemojex_feed_lag", stuck); !math.IsNaN(v) {
		t.Errorf("codemojex_feed_lag{game=%q} = %v after Close, want no series", stuck, v)
	}
	if v := plainGauge(t, "codemojex_feed_paused"); v != 0 {
		t.Errorf("codemojex_feed_paused = %v after the paused consumer closed, want 0", v)
	}
	if v := setGauge(t, "known"); v != 0 {
		t.Errorf("codemojex_feed_streams{set=\"known\"} = %v after every consumer closed, want 0", v)
	}
}

// setGauge returns codemojex_feed_streams{set}, NaN when absent.
func setGauge(tb testing.TB, set string) float64 {
	tb.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "codemojex_feed_streams" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "set" && l.GetValue() == set {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return math.NaN()
}
