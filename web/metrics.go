package web

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/codemojex/feed/internal/counterset"
)

// Process-wide collectors, declared once so several Servers in one process
// (tests) share them instead of registering twice. The counters a Server
// also reports in Stats are not kept here: each Server counts in its own
// counters (web.go), and metrics sums them on each scrape, so every
// event is counted once.
var (
	mTailLag = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "codemojex_web_tail_lag_seconds",
		Help:    "Time from an event's writer timestamp (at) to its hand-off to the hubs.",
		Buckets: counterset.LagBuckets,
	})
	mUpgradesRejected = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "codemojex_web_upgrades_rejected_total",
		Help: "Live connections (websocket upgrades and event streams) refused, by reason (rate, client: the per-address cap, capacity, handshake: e.g. a foreign Origin, cursor).",
	}, []string{"reason"})
	mRequestsRejected = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_web_requests_rejected_total",
		Help: "Plain requests refused because their client had MaxRequestsPerClient in flight.",
	})
	mHostsRejected = promauto.NewCounter(prometheus.CounterOpts{
		Name: "codemojex_web_foreign_hosts_rejected_total",
		Help: "Websocket, event-stream and admin requests refused for a Host header not in PublicHosts.",
	})
)

// frameTypes are the frame types a Server sends and counts, in the order
// of the per-type counters (frameIndex).
var frameTypes = [...]string{frameLine, frameState, frameBoard, frameWatching, frameReset}

// byFrame is a counter kept per frame type.
type byFrame [len(frameTypes)]atomic.Int64

func frameIndex(typ string) int {
	for i, t := range frameTypes {
		if t == typ {
			return i
		}
	}
	return -1
}

func (b *byFrame) add(typ string, n int64) {
	if i := frameIndex(typ); i >= 0 {
		b[i].Add(n)
	}
}

func (b *byFrame) get(typ string) int64 {
	if i := frameIndex(typ); i >= 0 {
		return b[i].Load()
	}
	return 0
}

func (b *byFrame) sum() int64 {
	var n int64
	for i := range b {
		n += b[i].Load()
	}
	return n
}

func (s *Server) countEncoded(typ string) { s.stats.encoded.add(typ, 1) }

func (s *Server) countSent(typ string) { s.stats.sent.add(typ, 1) }

// sentCount counts a writer's frames by type (frameTypes' order) until
// countSentBy adds them to the Server's counters.
type sentCount [len(frameTypes)]int64

// add counts f; a type the Server does not count (a probe's answer) is
// left out.
func (n *sentCount) add(f frame) {
	if i := frameIndex(f.kind()); i >= 0 {
		n[i]++
	}
}

// countSentBy adds the frames counted in n to the Server's and zeroes n.
func (s *Server) countSentBy(n *sentCount) {
	for i, v := range n {
		if v > 0 {
			s.stats.sent[i].Add(v)
			n[i] = 0
		}
	}
}

// countSlow counts clients a hub dropped for a full queue.
func (s *Server) countSlow(n int) {
	if n > 0 {
		s.stats.slowCloses.Add(int64(n))
	}
}

func frameCounter(name, help string, always []string, v func(c *counters) *byFrame) counterset.Metric[*counters] {
	return counterset.Labeled(name, help, "type", always, func(c *counters, add func(string, int64)) {
		b := v(c)
		for i, t := range frameTypes {
			add(t, b[i].Load())
		}
	})
}

// metrics is the process's collector of the Servers' counters
// (internal/counterset): each Server is added when it opens and retired
// when its goroutines have stopped. The clients gauge is the sum over the
// open Servers.
var metrics = counterset.New(
	counterset.Gauge("codemojex_web_websocket_clients", "Open websocket connections.",
		func(c *counters) int64 { return c.clients.Load() }),
	counterset.Gauge("codemojex_web_event_streams", "Open event streams (/games/GAME/events, the fallback where websockets are blocked).",
		func(c *counters) int64 { return c.streams.Load() }),
	frameCounter("codemojex_web_frames_sent_total",
		"Frames written to websockets and event streams, by frame type (line, state, board, watching, reset).",
		[]string{frameLine, frameState, frameBoard}, func(c *counters) *byFrame { return &c.sent }),
	frameCounter("codemojex_web_hub_frames_encoded_total",
		"Frames encoded by the tailer for a hub (once per frame per game, shared by its clients).",
		nil, func(c *counters) *byFrame { return &c.encoded }),
	counterset.Counter("codemojex_web_slow_client_closes_total",
		"Websockets and event streams closed because they did not keep up with their game.",
		func(c *counters) int64 { return c.slowCloses.Load() }),
	counterset.Counter("codemojex_web_pong_timeouts_total",
		"Websockets dropped as gone: a ping went unanswered for WriteTimeout while nothing written before it reached the peer.",
		func(c *counters) int64 { return c.pongTimeouts.Load() }),
	counterset.Counter("codemojex_web_resets_total",
		"Reset frames sent to clients too far behind or ahead of this store.",
		func(c *counters) int64 { return c.resets.Load() }),
	counterset.Counter("codemojex_web_frames_deflated_total",
		"Frames compressed for websockets that negotiated permessage-deflate: once per frame, shared by every such socket of its game.",
		func(c *counters) int64 { return c.deflated.frames.Load() }),
	counterset.Labeled("codemojex_web_deflate_bytes_total",
		"Payload bytes of the frames compressed, before (form=plain) and after (form=deflated; a frame that did not shrink goes plain and counts as it is): their ratio is what compression saves per frame.",
		"form", []string{"plain", "deflated"}, func(c *counters, add func(string, int64)) {
			add("plain", c.deflated.plain.Load())
			add("deflated", c.deflated.packed.Load())
		}),
	counterset.Counter("codemojex_web_tail_errors_total",
		"Failed store reads of the tailer.",
		func(c *counters) int64 { return c.tailErrors.Load() }),
)

func init() { prometheus.MustRegister(metrics) }
