package feed

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/codemojex/feed/internal/counterset"
)

// The gauges and the histogram are declared once for the process (several
// consumers in one test binary share them). The counters are not kept here:
// each consumer counts in its own counters (stats.go), and metrics sums
// them on each scrape, so every event is counted once.
var (
	mHandlerSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "codemojex_feed_handler_seconds",
		Help:    "Time spent in one handler call (an entry, or a batch for a BatchHandler).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
	mReadLag = promauto.NewHistogram(prometheus.HistogramOpts{
		Name: "codemojex_feed_read_lag_seconds",
		Help: "Time from a new entry's XADD (its stream id's time, the Redis server's clock) to the read that delivered it to this consumer (this host's clock), in milliseconds' steps.",
		// The buckets of codemojex_web_tail_lag_seconds, so that the two
		// split a line's way at the read: before it, waiting for the loop
		// (a commit, the linger, other duties); after it, prepare, commit
		// and hand-off.
		Buckets: counterset.LagBuckets,
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

func labels(v func(c *counters) *labeled) func(c *counters, add func(string, int64)) {
	return func(c *counters, add func(string, int64)) {
		for l, n := range v(c).each {
			add(l, n)
		}
	}
}

// metrics is the process's collector of the consumers' counters
// (internal/counterset): each consumer is added when it opens and retired
// when its goroutines have stopped.
var metrics = counterset.New(
	counterset.Labeled("codemojex_feed_delivered_total",
		"Entries handed to the handler, by path (new, pending, claim).",
		"path", nil, labels(func(c *counters) *labeled { return &c.delivered })),
	counterset.Counter("codemojex_feed_acked_total",
		"Entries acknowledged after the handler returned nil.",
		func(c *counters) int64 { return c.acked.Load() }),
	counterset.Counter("codemojex_feed_failed_total",
		"Handler failures (errors and panics) left pending for a retry.",
		func(c *counters) int64 { return c.failed.Load() }),
	counterset.Counter("codemojex_feed_handler_panics_total",
		"Handler panics, recovered and counted as failures.",
		func(c *counters) int64 { return c.panics.Load() }),
	counterset.Labeled("codemojex_feed_dead_total",
		"Entries dead-lettered, by reason (malformed, poison, attempts, conflict, future id, claimed).",
		"reason", nil, labels(func(c *counters) *labeled { return &c.dead })),
	counterset.Labeled("codemojex_feed_trimmed_total",
		"Pending entries found deleted or trimmed, by path (pending, claim).", "path", nil,
		// Deleted ids come from two places: process finds entries
		// without fields, XAUTOCLAIM reports ids it dropped.
		func(c *counters, add func(string, int64)) {
			for l, n := range c.trimmed.each {
				add(l, n)
			}
			if n := c.claimDeleted.Load(); n > 0 {
				add(pathClaim, n)
			}
		}),
	counterset.Counter("codemojex_feed_claimed_total",
		"Entries taken over by XAUTOCLAIM.",
		func(c *counters) int64 { return c.claimed.Load() }),
	counterset.Counter("codemojex_feed_kept_alive_total",
		"Entries whose idle time was refreshed while a slow handler ran.",
		func(c *counters) int64 { return c.keptAlive.Load() }),
	counterset.Labeled("codemojex_feed_group_errors_total",
		"XGROUP CREATE failures other than BUSYGROUP, by error code.",
		"code", nil, labels(func(c *counters) *labeled { return &c.groupErrors })),
	counterset.Labeled("codemojex_feed_groups_created_total",
		"Consumer groups created, by cause (new, recreated after NOGROUP).",
		"cause", nil, labels(func(c *counters) *labeled { return &c.groupsCreated })),
	counterset.Counter("codemojex_feed_consumers_deleted_total",
		"Idle consumers with no pending entry removed from a group.",
		func(c *counters) int64 { return c.consumersDeleted.Load() }),
	counterset.Labeled("codemojex_feed_loop_errors_total",
		"Errors of the consumer loop, by operation.",
		"op", nil, labels(func(c *counters) *labeled { return &c.loopErrors })),
	counterset.Counter("codemojex_feed_pauses_total",
		"Times the consumer paused on broken infrastructure.",
		func(c *counters) int64 { return c.pauses.Load() }),
	counterset.Counter("codemojex_feed_dead_duplicates_total",
		"Dead letters not written because one exists for that stream position (another group, a replay).",
		func(c *counters) int64 { return c.deadDuplicates.Load() }),
	counterset.Counter("codemojex_feed_caught_up_total",
		"Entries re-read from the streams to catch a new or older store up with its group.",
		func(c *counters) int64 { return c.caughtUp.Load() }),
	counterset.Counter("codemojex_feed_catch_up_skipped_total",
		"Streams whose store was behind its group only by entries still pending: the reader law delivers them, nothing re-read.",
		func(c *counters) int64 { return c.catchUpSkipped.Load() }),
	counterset.Counter("codemojex_feed_gaps_total",
		"Streams found trimmed beyond the store's position, and catch-up entries the handler refused PoisonAfter times: lines the store lacks.",
		func(c *counters) int64 { return c.gaps.Load() }),
	counterset.Counter("codemojex_feed_polls_found_total",
		"Polls of every stream that found entries the registry beat had missed.",
		func(c *counters) int64 { return c.polled.Load() }),
	counterset.Counter("codemojex_feed_lingers_total",
		"Blocking reads that waited the linger after a small batch, to gather the entries written meanwhile.",
		func(c *counters) int64 { return c.lingered.Load() }),
)

func init() { prometheus.MustRegister(metrics) }
