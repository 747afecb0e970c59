package store

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Collectors are package-level so several DBs in one process (tests, feedctl
// rebuild) share them instead of registering twice.
var (
	busyRetries = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_store_busy_retries_total",
		Help: "SQLITE_BUSY/LOCKED errors retried by the store, by operation.",
	}, []string{"op"})
	upsertEvents = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_store_upsert_events_total",
		Help: "Events handed to Upsert, by outcome (inserted, duplicate, error).",
	}, []string{"outcome"})
	upsertFallbacks = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_store_upsert_fallbacks_total",
		Help: "Batches redone entry by entry (one SAVEPOINT each) after a statement failed.",
	})
	upsertConflicts = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_store_conflicts_total",
		Help: "Entries whose (game, EVT id) was stored with another payload (the first line stays).",
	})
	checkpoints = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_store_checkpoints_total",
		Help: "Background WAL checkpoints run (PASSIVE, off the write path).",
	})
	boardReads = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_store_board_reads_total",
		Help: "ScoreboardAt calls, by whether the board cache served them (hit) or the file (miss).",
	}, []string{"result"})
	boardHits, boardMisses = boardReads.WithLabelValues("hit"), boardReads.WithLabelValues("miss")
	upsertBatchSeconds     = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "codemojex_store_upsert_batch_seconds",
		Help:    "Time to commit one Upsert batch, busy retries included.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
)
