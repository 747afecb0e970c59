package feed

import (
	"maps"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The gauges and the histogram are declared once for the process (several
// consumers in one test binary share them). The counters are not kept here:
// each consumer counts in its own counters (stats.go), and consumerMetrics
// sums them on each scrape, so every event is counted once.
var (
	mHandlerSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "codemojex_feed_handler_seconds",
		Help:    "Time spent in one handler call (an entry, or a batch for a BatchHandler).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
	mPaused = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "codemojex_feed_paused",
		Help: "1 while the consumer is paused on broken infrastructure (full disk, store unwritable), else 0.",
	})
	mPending = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "codemojex_feed_pending",
		Help: "Entries delivered to the group and not yet acknowledged, by game (games of the read set only).",
	}, []string{"game"})
	mStreams = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "codemojex_feed_streams",
		Help: "Streams of the read set, by set: known (all), working (with a reason to be read), hot (in the blocking read).",
	}, []string{"set"})
	mLag = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "codemojex_feed_lag",
		Help: "Entries not yet delivered to the group, by game (-1 when unknown).",
	}, []string{"game"})
)

// A counterMetric is one Prometheus counter read from counters. A plain
// counter (label "") yields one value under the label value "".
type counterMetric struct {
	desc  *prometheus.Desc
	label string
	read  func(c *counters, add func(label string, n int64))
}

func plain(name, help string, v func(c *counters) int64) counterMetric {
	return counterMetric{
		desc: prometheus.NewDesc(name, help, nil, nil),
		read: func(c *counters, add func(string, int64)) { add("", v(c)) },
	}
}

func byLabel(name, help, label string, v func(c *counters) *labeled) counterMetric {
	return counterMetric{
		desc:  prometheus.NewDesc(name, help, []string{label}, nil),
		label: label,
		read: func(c *counters, add func(string, int64)) {
			for l, n := range v(c).each {
				add(l, n)
			}
		},
	}
}

var counterMetrics = []counterMetric{
	byLabel("codemojex_feed_delivered_total",
		"Entries handed to the handler, by path (new, pending, claim).",
		"path", func(c *counters) *labeled { return &c.delivered }),
	plain("codemojex_feed_acked_total",
		"Entries acknowledged after the handler returned nil.",
		func(c *counters) int64 { return c.acked.Load() }),
	plain("codemojex_feed_failed_total",
		"Handler failures (errors and panics) left pending for a retry.",
		func(c *counters) int64 { return c.failed.Load() }),
	plain("codemojex_feed_handler_panics_total",
		"Handler panics, recovered and counted as failures.",
		func(c *counters) int64 { return c.panics.Load() }),
	byLabel("codemojex_feed_dead_total",
		"Entries dead-lettered, by reason (malformed, poison, attempts, conflict, future id).",
		"reason", func(c *counters) *labeled { return &c.dead }),
	{
		desc: prometheus.NewDesc("codemojex_feed_trimmed_total",
			"Pending entries found deleted or trimmed, by path (pending, claim).", []string{"path"}, nil),
		label: "path",
		// Deleted ids come from two places: process finds entries
		// without fields, XAUTOCLAIM reports ids it dropped.
		read: func(c *counters, add func(string, int64)) {
			for l, n := range c.trimmed.each {
				add(l, n)
			}
			if n := c.claimDeleted.Load(); n > 0 {
				add(pathClaim, n)
			}
		},
	},
	plain("codemojex_feed_claimed_total",
		"Entries taken over by XAUTOCLAIM.",
		func(c *counters) int64 { return c.claimed.Load() }),
	plain("codemojex_feed_kept_alive_total",
		"Entries whose idle time was refreshed while a slow handler ran.",
		func(c *counters) int64 { return c.keptAlive.Load() }),
	byLabel("codemojex_feed_group_errors_total",
		"XGROUP CREATE failures other than BUSYGROUP, by error code.",
		"code", func(c *counters) *labeled { return &c.groupErrors }),
	byLabel("codemojex_feed_groups_created_total",
		"Consumer groups created, by cause (new, recreated after NOGROUP).",
		"cause", func(c *counters) *labeled { return &c.groupsCreated }),
	plain("codemojex_feed_consumers_deleted_total",
		"Idle consumers with no pending entry removed from a group.",
		func(c *counters) int64 { return c.consumersDeleted.Load() }),
	byLabel("codemojex_feed_loop_errors_total",
		"Errors of the consumer loop, by operation.",
		"op", func(c *counters) *labeled { return &c.loopErrors }),
	plain("codemojex_feed_pauses_total",
		"Times the consumer paused on broken infrastructure.",
		func(c *counters) int64 { return c.pauses.Load() }),
	plain("codemojex_feed_dead_duplicates_total",
		"Dead letters not written because one exists for that stream position (another group, a replay).",
		func(c *counters) int64 { return c.deadDuplicates.Load() }),
	plain("codemojex_feed_caught_up_total",
		"Entries re-read from the streams to catch a new or older store up with its group.",
		func(c *counters) int64 { return c.caughtUp.Load() }),
	plain("codemojex_feed_gaps_total",
		"Streams found trimmed beyond the store's position: lines the store can no longer get.",
		func(c *counters) int64 { return c.gaps.Load() }),
	plain("codemojex_feed_polls_found_total",
		"Polls of every stream that found entries the registry beat had missed.",
		func(c *counters) int64 { return c.polled.Load() }),
	plain("codemojex_feed_lingers_total",
		"Small batches that waited the linger for more entries before their commit.",
		func(c *counters) int64 { return c.lingered.Load() }),
}

// consumerMetrics is the process's collector of the consumers' counters. It
// sums the counters of the open consumers and adds what closed ones had
// counted, so a counter never goes down when a consumer closes.
type consumerMetrics struct {
	mu     sync.Mutex
	open   map[*counters]struct{}
	closed []map[string]int64 // by counterMetrics index, then label value
}

var metrics = newConsumerMetrics()

func init() { prometheus.MustRegister(metrics) }

func newConsumerMetrics() *consumerMetrics {
	m := &consumerMetrics{open: map[*counters]struct{}{}, closed: make([]map[string]int64, len(counterMetrics))}
	for i := range m.closed {
		m.closed[i] = map[string]int64{}
	}
	return m
}

// add starts counting c.
func (m *consumerMetrics) add(c *counters) {
	m.mu.Lock()
	m.open[c] = struct{}{}
	m.mu.Unlock()
}

// retire folds c, whose goroutines have stopped, into the closed totals.
func (m *consumerMetrics) retire(c *counters) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.open[c]; !ok {
		return
	}
	delete(m.open, c)
	for i, cm := range counterMetrics {
		cm.read(c, func(l string, n int64) { m.closed[i][l] += n })
	}
}

// Describe implements prometheus.Collector.
func (m *consumerMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, cm := range counterMetrics {
		ch <- cm.desc
	}
}

// Collect implements prometheus.Collector.
func (m *consumerMetrics) Collect(ch chan<- prometheus.Metric) {
	sums := make([]map[string]int64, len(counterMetrics))
	m.mu.Lock()
	for i, cm := range counterMetrics {
		sums[i] = maps.Clone(m.closed[i])
		for c := range m.open {
			cm.read(c, func(l string, n int64) { sums[i][l] += n })
		}
	}
	m.mu.Unlock()
	for i, cm := range counterMetrics {
		if cm.label == "" {
			ch <- prometheus.MustNewConstMetric(cm.desc, prometheus.CounterValue, float64(sums[i][""]))
			continue
		}
		for l, n := range sums[i] {
			ch <- prometheus.MustNewConstMetric(cm.desc, prometheus.CounterValue, float64(n), l)
		}
	}
}
