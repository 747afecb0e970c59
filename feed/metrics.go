package feed

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Collectors are declared once for the process (several consumers in one
// test binary share them); per-consumer numbers are in Stats.
var (
	mDelivered = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_feed_delivered_total",
		Help: "Entries handed to the handler, by path (new, pending, claim).",
	}, []string{"path"})
	mAcked = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_feed_acked_total",
		Help: "Entries acknowledged after the handler returned nil.",
	})
	mFailed = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_feed_failed_total",
		Help: "Handler failures (errors and panics) left pending for a retry.",
	})
	mPanics = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_feed_handler_panics_total",
		Help: "Handler panics, recovered and counted as failures.",
	})
	mDead = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_feed_dead_total",
		Help: "Entries dead-lettered, by reason (malformed, poison, attempts, conflict, future id).",
	}, []string{"reason"})
	mTrimmed = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_feed_trimmed_total",
		Help: "Pending entries found deleted or trimmed, by path (pending, claim).",
	}, []string{"path"})
	mClaimed = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_feed_claimed_total",
		Help: "Entries taken over by XAUTOCLAIM.",
	})
	mKeptAlive = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_feed_kept_alive_total",
		Help: "Entries whose idle time was refreshed while a slow handler ran.",
	})
	mGroupErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_feed_group_errors_total",
		Help: "XGROUP CREATE failures other than BUSYGROUP, by error code.",
	}, []string{"code"})
	mGroupsCreated = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_feed_groups_created_total",
		Help: "Consumer groups created, by cause (new, recreated after NOGROUP).",
	}, []string{"cause"})
	mConsumersDeleted = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_feed_consumers_deleted_total",
		Help: "Idle consumers with no pending entry removed from a group.",
	})
	mLoopErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_feed_loop_errors_total",
		Help: "Errors of the consumer loop, by operation.",
	}, []string{"op"})
	mHandlerSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "codemojex_feed_handler_seconds",
		Help:    "Time spent in one handler call (an entry, or a batch for a BatchHandler).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
	mPaused = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "codemojex_feed_paused",
		Help: "1 while the consumer is paused on broken infrastructure (full disk, store unwritable), else 0.",
	})
	mPauses = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_feed_pauses_total",
		Help: "Times the consumer paused on broken infrastructure.",
	})
	mDeadDuplicates = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_feed_dead_duplicates_total",
		Help: "Dead letters not written because one exists for that stream position (another group, a replay).",
	})
	mCaughtUp = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_feed_caught_up_total",
		Help: "Entries re-read from the streams to catch a new or older store up with its group.",
	})
	mGaps = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_feed_gaps_total",
		Help: "Streams found trimmed beyond the store's position: lines the store can no longer get.",
	})
	mPending = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "codemojex_feed_pending",
		Help: "Entries delivered to the group and not yet acknowledged, by game (games of the read set only).",
	}, []string{"game"})
	mStreams = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "codemojex_feed_streams",
		Help: "Streams of the read set, by set: known (all), working (with a reason to be read), hot (in the blocking read).",
	}, []string{"set"})
	mPolled = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_feed_polls_found_total",
		Help: "Polls of every stream that found entries the registry beat had missed.",
	})
	mLag = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "codemojex_feed_lag",
		Help: "Entries not yet delivered to the group, by game (-1 when unknown).",
	}, []string{"game"})
)
