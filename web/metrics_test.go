package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/web"
)

// metric returns the sum of a counter's or gauge's series on the default
// registry (the renderer's /metrics) whose labels include want.
func metric(tb testing.TB, name string, want map[string]string) float64 {
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
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// TestMetricsCountOnce: a metric on /metrics is the sum of the Servers'
// Stats, counted once, and a counter stays put when a Server closes.
func TestMetricsCountOnce(t *testing.T) {
	type check struct {
		name   string
		labels map[string]string
		stat   func(web.Stats) int64
	}
	checks := []check{
		{"codemojex_web_frames_sent_total", nil, func(s web.Stats) int64 { return s.FramesSent }},
		{"codemojex_web_hub_frames_encoded_total", map[string]string{"type": "line"}, func(s web.Stats) int64 { return s.LinesEncoded }},
		{"codemojex_web_hub_frames_encoded_total", map[string]string{"type": "state"}, func(s web.Stats) int64 { return s.StatesEncoded }},
		{"codemojex_web_resets_total", nil, func(s web.Stats) int64 { return s.Resets }},
		{"codemojex_web_slow_client_closes_total", nil, func(s web.Stats) int64 { return s.SlowCloses }},
		{"codemojex_web_pong_timeouts_total", nil, func(s web.Stats) int64 { return s.PongTimeouts }},
		{"codemojex_web_tail_errors_total", nil, func(s web.Stats) int64 { return s.TailErrors }},
		{"codemojex_web_websocket_clients", nil, func(s web.Stats) int64 { return s.Clients }},
	}
	// Earlier tests' servers are closed: their counts are in the baseline
	// and must not move.
	base := make([]float64, len(checks))
	for i, ch := range checks {
		base[i] = metric(t, ch.name, ch.labels)
	}

	// e1: a watcher of g1 gets three lines, backfilled and tailed.
	e1 := MustOpenEnv(t, nil)
	w1 := e1.dial("g1", 0)
	// The state frame is written once the socket has joined g1's hub, so
	// the lines stored after it are encoded by the hub. Stored sooner, the
	// tailer could pass them by (no hub yet) and the backfill bring them,
	// and LinesEncoded stayed 0 (one run in a dozen).
	if f := w1.next(); f.T != "state" {
		t.Fatalf("first frame %q, want state", f.T)
	}
	e1.upsert(e1.gen("g1").chats(t, 3)...)
	w1.lines(3)
	// e2: a watcher gets a line; a cursor ahead of the store gets a reset.
	e2 := MustOpenEnv(t, nil)
	seqs := e2.upsert(e2.gen("g1").chats(t, 2)...)
	w2 := e2.dial("g1", seqs[0])
	w2.lines(1)
	r := e2.dial("g1", seqs[1]+10)
	waitFor(t, 5*time.Second, "a reset frame", func() bool {
		f, err := r.readAny(time.Second)
		return err != nil || f.T == "reset"
	})
	waitFor(t, 5*time.Second, "e2 has one client", func() bool { return e2.srv.Stats().Clients == 1 })

	// want compares a scrape taken between two equal snapshots of the
	// Stats (presence and state frames may still be on their way).
	want := func(step string, st1 func() web.Stats) {
		t.Helper()
		var diff string
		waitFor(t, 10*time.Second, step+": a scrape equal to the Stats sum", func() bool {
			a1, a2 := st1(), e2.srv.Stats()
			got := make([]float64, len(checks))
			for i, ch := range checks {
				got[i] = metric(t, ch.name, ch.labels) - base[i]
			}
			if b1, b2 := st1(), e2.srv.Stats(); a1 != b1 || a2 != b2 {
				return false
			}
			diff = ""
			for i, ch := range checks {
				if w := float64(ch.stat(a1) + ch.stat(a2)); got[i] != w {
					diff += fmt.Sprintf("; %s%v = %v over the baseline, want %v", ch.name, ch.labels, got[i], w)
				}
			}
			return diff == ""
		})
		if diff != "" {
			t.Errorf("%s%s", step, diff)
		}
	}
	want("both open", e1.srv.Stats)
	st1, st2 := e1.srv.Stats(), e2.srv.Stats()
	if st1.FramesSent < 3 || st1.LinesEncoded != 3 || st2.Resets != 1 || st1.Clients != 1 {
		t.Fatalf("Stats too thin to tell counts apart: %+v, %+v", st1, st2)
	}

	if err := e1.srv.Close(); err != nil {
		t.Fatal(err)
	}
	closed := e1.srv.Stats()
	if closed.Clients != 0 || closed.FramesSent < st1.FramesSent || closed.LinesEncoded != st1.LinesEncoded {
		t.Errorf("Stats after Close: %+v, was %+v", closed, st1)
	}
	want("one closed", func() web.Stats { return closed })
	if got := metric(t, "codemojex_web_resets_total", nil) - base[3]; got != 1 {
		t.Errorf("resets after a close = %v over the baseline, want 1", got)
	}
}

// TestFramesSentByType: codemojex_web_frames_sent_total counts each frame
// under its own type on either engine: two watchers of a game get a state
// frame each and watching frames, and no watching frame is counted as a
// state.
func TestFramesSentByType(t *testing.T) {
	for _, engine := range []string{web.WSEngineStd, web.WSEngineNbio} {
		t.Run(engine, func(t *testing.T) {
			sent := func(typ string) float64 {
				return metric(t, "codemojex_web_frames_sent_total", map[string]string{"type": typ})
			}
			states, watching := sent("state"), sent("watching")
			e := MustOpenEnv(t, func(c *web.Config) { c.WSEngine = engine })
			w1 := e.dial("g1", 0)
			if f := w1.next(); f.T != "state" {
				t.Fatalf("first frame %+v, want the state", f)
			}
			w2 := e.dial("g1", 0)
			if f := w2.next(); f.T != "state" {
				t.Fatalf("first frame %+v, want the state", f)
			}
			w1.waitWatching(2)
			waitFor(t, 5*time.Second, "two state frames and a watching frame counted", func() bool {
				return sent("state")-states == 2 && sent("watching")-watching >= 1
			})
		})
	}
}

// histogram returns the sample count and sum of a histogram on the
// default registry (the renderer's /metrics).
func histogram(tb testing.TB, name string) (count uint64, sum float64) {
	tb.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				count += m.GetHistogram().GetSampleCount()
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return count, sum
}

// TestTailLagOfFutureAt: a line whose writer's "at" is ahead of this
// host's clock (a writer's clock a few milliseconds ahead, or a forged
// "at" a century ahead, which any producer can write) counts in
// codemojex_web_tail_lag_seconds as no lag. It was observed as it came,
// negative: the histogram's _sum, a counter to Prometheus, went down (by
// three billion seconds for this line), so rate() took it for a reset and
// every average of the tail lag over it was nonsense, and the line fell in
// the lowest bucket anyway. The feed's read lag clamps at zero already.
func TestTailLagOfFutureAt(t *testing.T) {
	const name = "codemojex_web_tail_lag_seconds"
	e := MustOpenEnv(t, nil)
	w := e.dial("g1", 0)
	if f := w.next(); f.T != "state" {
		t.Fatalf("first frame %+v, want the state", f)
	}
	count, sum := histogram(t, name)
	ev := e.gen("g1").ev(t, event.KindChat, "player", "ada", "text", "from the future")
	ev.At = time.Now().AddDate(100, 0, 0).UTC().Truncate(time.Second)
	ev.Payload["at"] = ev.At.Format(time.RFC3339)
	e.upsert(ev)
	w.lines(1)
	waitFor(t, 5*time.Second, "the line's tail lag observed", func() bool {
		c, _ := histogram(t, name)
		return c > count
	})
	if c, s := histogram(t, name); s < sum {
		t.Errorf("%s_sum went down from %v to %v (%d more samples): a negative lag was observed", name, sum, s, c-count)
	}
}
