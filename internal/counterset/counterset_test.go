package counterset_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/codemojex/feed/internal/counterset"
)

type owner struct {
	done, open atomic.Int64
	byKind     map[string]*atomic.Int64
}

func newOwner() *owner {
	return &owner{byKind: map[string]*atomic.Int64{"a": new(atomic.Int64), "b": new(atomic.Int64)}}
}

func newCollector() *counterset.Collector[*owner] {
	return counterset.New(
		counterset.Counter("t_done_total", "Done.", func(o *owner) int64 { return o.done.Load() }),
		counterset.Gauge("t_open", "Open.", func(o *owner) int64 { return o.open.Load() }),
		counterset.Labeled("t_kind_total", "By kind.", "kind", []string{"a"}, func(o *owner, add func(string, int64)) {
			for k, n := range o.byKind {
				add(k, n.Load())
			}
		}),
	)
}

// TestSumsOpenAndKeepsClosed: counters sum over open owners and keep a
// retired owner's counts; gauges forget it; a label shows at zero only
// when listed as always.
func TestSumsOpenAndKeepsClosed(t *testing.T) {
	c := newCollector()
	a, b := newOwner(), newOwner()
	c.Add(a)
	c.Add(b)
	a.done.Add(2)
	b.done.Add(3)
	a.open.Store(4)
	b.open.Store(5)
	b.byKind["b"].Add(7)
	want := func(s string) {
		t.Helper()
		if err := testutil.CollectAndCompare(c, strings.NewReader(s)); err != nil {
			t.Fatal(err)
		}
	}
	want(`
# HELP t_done_total Done.
# TYPE t_done_total counter
t_done_total 5
# HELP t_kind_total By kind.
# TYPE t_kind_total counter
t_kind_total{kind="a"} 0
t_kind_total{kind="b"} 7
# HELP t_open Open.
# TYPE t_open gauge
t_open 9
`)
	c.Retire(b)
	c.Retire(b) // twice: no double count
	a.done.Add(1)
	want(`
# HELP t_done_total Done.
# TYPE t_done_total counter
t_done_total 6
# HELP t_kind_total By kind.
# TYPE t_kind_total counter
t_kind_total{kind="a"} 0
t_kind_total{kind="b"} 7
# HELP t_open Open.
# TYPE t_open gauge
t_open 4
`)
	if err := prometheus.NewPedanticRegistry().Register(c); err != nil {
		t.Fatal(err)
	}
}
