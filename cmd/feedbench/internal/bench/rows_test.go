package bench_test

import (
	"os"
	"testing"
	"time"

	"github.com/codemojex/feed/cmd/feedbench/internal/bench"
	"github.com/codemojex/feed/web"
)

// TestIdleVerdict checks the idle target: the many games may cost 3× the
// few plus 2% of a core over the window, and no more.
func TestIdleVerdict(t *testing.T) {
	few := bench.IdleCase{Games: 200, Renderer: 100 * time.Millisecond, Redis: 100 * time.Millisecond}
	cfg := bench.IdleConfig{Window: 10 * time.Second}
	tests := []struct {
		name string
		many time.Duration // renderer CPU of the many games (Redis: 0)
		met  bool
	}{
		{"equal", 200 * time.Millisecond, true},
		{"at the limit", 800 * time.Millisecond, true}, // 3 × 200 ms + 2% of 10 s
		{"above the limit", 810 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := bench.IdleResult{Cfg: cfg, Few: few, Many: bench.IdleCase{Games: 100000, Renderer: tt.many}}.Rows()
			last := rows[len(rows)-1]
			if last.Met == nil || *last.Met != tt.met {
				t.Fatalf("verdict %q, want met=%v (row %+v)", last.Verdict(), tt.met, last)
			}
		})
	}
}

// TestClusterVerdict checks that the cluster latency row is met only with
// p99 ≤ 25 ms and every delivery received, and its delivery audit's row
// only when some clients were checked and none saw a line missing,
// doubled or out of order.
func TestClusterVerdict(t *testing.T) {
	clean := bench.Audit{Clients: 10, Lines: 100}
	doubled := clean
	doubled.Doubled, doubled.First = 1, "client 3 (g1) got evt_x (seq 7) twice"
	tests := []struct {
		name          string
		p99           time.Duration
		got, expected int
		audit, single bench.Audit // of the cluster's round and the single node's
		met, kept     bool
	}{
		{"fast and complete", 20 * time.Millisecond, 10, 10, clean, clean, true, true},
		{"at the target", 25 * time.Millisecond, 10, 10, clean, clean, true, true},
		{"slow", 26 * time.Millisecond, 10, 10, clean, clean, false, true},
		{"a delivery missing", 5 * time.Millisecond, 9, 10, clean, clean, false, true},
		{"a line doubled", 5 * time.Millisecond, 10, 10, doubled, clean, true, false},
		{"no client checked", 5 * time.Millisecond, 10, 10, bench.Audit{}, bench.Audit{}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bench.ClusterResult{
				Single:  bench.BackendResult{Rate: 1000, Audit: tt.single},
				Cluster: bench.BackendResult{Rate: 900, Q: bench.Quantiles{N: tt.got, P99: tt.p99}, Expected: tt.expected, Audit: tt.audit},
			}
			verdicts := map[string]bool{}
			for _, row := range r.Rows() {
				if row.Met != nil {
					verdicts[row.Target] = *row.Met
				}
			}
			want := map[string]bool{"p99 ≤ 25 ms": tt.met, "none missing, doubled or out of order": tt.kept}
			if len(verdicts) != len(want) {
				t.Fatalf("verdicts %v, want %v", verdicts, want)
			}
			for target, met := range want {
				if got, ok := verdicts[target]; !ok || got != met {
					t.Errorf("verdict of %q: %v, want %v (all: %v)", target, got, met, verdicts)
				}
			}
		})
	}
}

// TestEngines: feedbench labels the renderer's engine as the renderer will
// pick it (its default, or $FEED_WS_ENGINE, which the renderer processes
// inherit) and compares it with the other one.
func TestEngines(t *testing.T) {
	for _, tt := range []struct{ env, def, other string }{
		{"", web.WSEngineNbio, web.WSEngineStd},
		{"std", web.WSEngineStd, web.WSEngineNbio},
		{"nbio", web.WSEngineNbio, web.WSEngineStd},
	} {
		t.Setenv("FEED_WS_ENGINE", tt.env)
		if tt.env == "" {
			os.Unsetenv("FEED_WS_ENGINE")
		}
		if got := bench.DefaultEngine(); got != tt.def {
			t.Errorf("$FEED_WS_ENGINE %q: DefaultEngine %q, want %q", tt.env, got, tt.def)
		}
		if got := bench.OtherEngine(); got != tt.other {
			t.Errorf("$FEED_WS_ENGINE %q: OtherEngine %q, want %q", tt.env, got, tt.other)
		}
	}
}
