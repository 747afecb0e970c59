package web

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Process-wide collectors, declared once so several Servers in one process
// (tests) share them instead of registering twice.
var (
	mClients = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "codemojex_web_websocket_clients",
		Help: "Open websocket connections.",
	})
	mFramesSent = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_web_frames_sent_total",
		Help: "Websocket frames written, by frame type (line, state, watching, reset).",
	}, []string{"type"})
	mFramesEncoded = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_web_hub_frames_encoded_total",
		Help: "Frames encoded by the tailer for a hub (once per frame per game, shared by its clients).",
	}, []string{"type"})
	mSlowCloses = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_web_slow_client_closes_total",
		Help: "Websockets closed because they did not keep up with their game.",
	})
	mResets = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_web_resets_total",
		Help: "Reset frames sent to clients too far behind or ahead of this store.",
	})
	mTailLag = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "codemojex_web_tail_lag_seconds",
		Help:    "Time from an event's writer timestamp (at) to its hand-off to the hubs.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	})
	mTailErrors = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_web_tail_errors_total",
		Help: "Failed store reads of the tailer.",
	})
	mUpgradesRejected = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_web_upgrades_rejected_total",
		Help: "Websocket upgrades refused, by reason (rate, client: the per-address cap, capacity, handshake: e.g. a foreign Origin, cursor).",
	}, []string{"reason"})
	mRequestsRejected = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_web_requests_rejected_total",
		Help: "Plain requests refused because their client had MaxRequestsPerClient in flight.",
	})
	mHostsRejected = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_web_foreign_hosts_rejected_total",
		Help: "Websocket and admin requests refused for a Host header not in PublicHosts.",
	})
)

func (s *Server) countEncoded(typ string) {
	if typ == frameLine {
		s.stats.linesEncoded.Add(1)
	} else if typ == frameState {
		s.stats.statesEncoded.Add(1)
	}
	mFramesEncoded.WithLabelValues(typ).Inc()
}

func (s *Server) countSent(typ string) {
	s.stats.framesSent.Add(1)
	mFramesSent.WithLabelValues(typ).Inc()
}

// The frame counters of the websocket writers' hot path, looked up once.
var (
	mSentLines  = mFramesSent.WithLabelValues(frameLine)
	mSentStates = mFramesSent.WithLabelValues(frameState)
)

// countSentN counts the line and state frames of one written batch.
func (s *Server) countSentN(lines, states int64) {
	if lines+states == 0 {
		return
	}
	s.stats.framesSent.Add(lines + states)
	if lines > 0 {
		mSentLines.Add(float64(lines))
	}
	if states > 0 {
		mSentStates.Add(float64(states))
	}
}

// countSlow counts clients a hub dropped for a full queue.
func (s *Server) countSlow(n int) {
	if n > 0 {
		s.stats.slowCloses.Add(int64(n))
		mSlowCloses.Add(float64(n))
	}
}
