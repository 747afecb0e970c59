// Package counterset exports counters kept by many short-lived owners (the
// feed's consumers, the web's servers; several of each in one test binary)
// as one Prometheus collector. Owners count in plain atomics of their own;
// a Collector sums the open owners on each scrape and keeps what closed
// ones had counted, so every event is counted once and a counter never goes
// down when its owner closes. It also holds the buckets that the feed's and
// the web's lag histograms share (LagBuckets).
package counterset

import (
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// A Metric is one Prometheus metric read from an owner's counters of type T.
type Metric[T any] struct {
	desc   *prometheus.Desc
	typ    prometheus.ValueType
	label  string   // "" for a metric without a label
	always []string // label values shown even at zero
	read   func(c T, add func(label string, n int64))
}

// Counter is a counter without labels, read by v.
func Counter[T any](name, help string, v func(c T) int64) Metric[T] {
	return Metric[T]{
		desc:   prometheus.NewDesc(name, help, nil, nil),
		typ:    prometheus.CounterValue,
		always: []string{""},
		read:   func(c T, add func(string, int64)) { add("", v(c)) },
	}
}

// Gauge is a gauge without labels, read by v: the sum over the open owners
// (a closed owner's last value is not kept).
func Gauge[T any](name, help string, v func(c T) int64) Metric[T] {
	m := Counter(name, help, v)
	m.typ = prometheus.GaugeValue
	return m
}

// Labeled is a counter with one label, read by calling add once per label
// value. Values in always are shown even while zero; others appear once
// they count, as a vector's child does.
func Labeled[T any](name, help, label string, always []string, read func(c T, add func(label string, n int64))) Metric[T] {
	return Metric[T]{
		desc:   prometheus.NewDesc(name, help, []string{label}, nil),
		typ:    prometheus.CounterValue,
		label:  label,
		always: always,
		read:   read,
	}
}

// A Collector is a prometheus.Collector over the metrics of the owners
// added to it.
type Collector[T comparable] struct {
	metrics []Metric[T]

	mu     sync.Mutex
	open   map[T]struct{}
	closed []map[string]int64 // by metrics index, then label value
}

// New returns a collector of metrics.
func New[T comparable](metrics ...Metric[T]) *Collector[T] {
	c := &Collector[T]{metrics: metrics, open: map[T]struct{}{}, closed: make([]map[string]int64, len(metrics))}
	for i := range c.closed {
		c.closed[i] = map[string]int64{}
	}
	return c
}

// Add starts counting owner.
func (c *Collector[T]) Add(owner T) {
	c.mu.Lock()
	c.open[owner] = struct{}{}
	c.mu.Unlock()
}

// Retire folds the counters of owner, whose goroutines have stopped, into
// the closed totals. Retiring an owner twice, or one never added, does
// nothing.
func (c *Collector[T]) Retire(owner T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.open[owner]; !ok {
		return
	}
	delete(c.open, owner)
	for i, m := range c.metrics {
		if m.typ == prometheus.GaugeValue {
			continue
		}
		m.read(owner, func(l string, n int64) { c.closed[i][l] += n })
	}
}

// Describe implements prometheus.Collector.
func (c *Collector[T]) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector.
func (c *Collector[T]) Collect(ch chan<- prometheus.Metric) {
	sums := make([]map[string]int64, len(c.metrics))
	c.mu.Lock()
	for i, m := range c.metrics {
		sums[i] = maps.Clone(c.closed[i])
		for owner := range c.open {
			m.read(owner, func(l string, n int64) { sums[i][l] += n })
		}
	}
	c.mu.Unlock()
	for i, m := range c.metrics {
		for _, l := range m.always {
			if _, ok := sums[i][l]; !ok {
				sums[i][l] = 0
			}
		}
		for l, n := range sums[i] {
			if n == 0 && !slices.Contains(m.always, l) {
				continue
			}
			if m.label == "" {
				ch <- prometheus.MustNewConstMetric(m.desc, m.typ, float64(n))
			} else {
				ch <- prometheus.MustNewConstMetric(m.desc, m.typ, float64(n), l)
			}
		}
	}
}

// LagBuckets are the buckets, in seconds, of the histograms that measure a
// line's way: fine below 50 ms, where the live path's p50 and p99 lie, and
// coarse up to a minute for a renderer catching up. The feed's read lag and
// the web's tail lag share them, so that one splits the other at the read
// (feedbench reads both, docs/benchmarks.md).
var LagBuckets = []float64{.001, .002, .003, .004, .006, .008, .01, .015, .02, .025, .03, .04, .05, .075, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
