package bench_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/cmd/feedbench/internal/bench"
	"github.com/codemojex/feed/web"
)

func TestSummarize(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		out := make([]time.Duration, len(n))
		for i, x := range n {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name          string
		in            []time.Duration
		p50, p99, max time.Duration
	}{
		{"empty", nil, 0, 0, 0},
		{"one", ms(7), 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond},
		{"unsorted", ms(5, 1, 4, 2, 3), 3 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond},
		{"hundred", func() []time.Duration {
			var d []time.Duration
			for i := 100; i >= 1; i-- {
				d = append(d, time.Duration(i)*time.Millisecond)
			}
			return d
		}(), 50 * time.Millisecond, 99 * time.Millisecond, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := bench.Summarize(tt.in)
			if q.P50 != tt.p50 || q.P99 != tt.p99 || q.Max != tt.max || q.N != len(tt.in) {
				t.Fatalf("Summarize = %+v, want p50 %v p99 %v max %v n %d", q, tt.p50, tt.p99, tt.max, len(tt.in))
			}
		})
	}
}

// TestThroughputSmall runs both loops over a small pre-fill: the pipeline
// must store and ack every event (pipelineLoop checks the store's count).
func TestThroughputSmall(t *testing.T) {
	res, err := bench.Throughput(context.Background(), bench.ThroughputConfig{
		Dir: t.TempDir(), Games: 4, Events: 2000, Rounds: 1, Count: 100, Log: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 2000 || len(res.Raw) != 2 || len(res.Pipeline) != 1 || res.Raw[0] <= 0 || res.Pipeline[0] <= 0 {
		t.Fatalf("result %+v", res)
	}
}

// TestLatencyInProcess runs the latency benchmark against an in-process
// renderer with a few clients, in one round and in two: every marked line
// must reach every client of its game, and the rounds' figures must pool
// into one (the lines of both, a p99 per round).
func TestLatencyInProcess(t *testing.T) {
	for _, rounds := range []int{1, 2} {
		t.Run(fmt.Sprintf("rounds=%d", rounds), func(t *testing.T) {
			res, err := bench.Latency(context.Background(), bench.LatencyConfig{
				Dir: t.TempDir(), Games: 3, Clients: 6, Rate: 100, Rounds: rounds,
				Warmup: 200 * time.Millisecond, Duration: time.Second, Log: io.Discard,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Sent != 100 || res.Expected != 200 || res.Q.N != res.Expected || res.Dropped != 0 {
				t.Fatalf("sent %d, expected %d, got %d deliveries, %d dropped", res.Sent, res.Expected, res.Q.N, res.Dropped)
			}
			if len(res.RoundP99) != rounds {
				t.Fatalf("p99 of %d rounds, want %d", len(res.RoundP99), rounds)
			}
			// Each round checks its six clients' line frames, backfills
			// included.
			if a := res.Audit; a.Clients != 6*rounds || !a.Kept() || a.Lines < res.Q.N {
				t.Fatalf("the delivery contract: %s, for %d deliveries in %d rounds", a, res.Q.N, rounds)
			}
			for _, p := range res.RoundP99 {
				if p <= 0 || p > res.Q.Max {
					t.Errorf("a round's p99 %v is outside (0, the pooled max %v]", p, res.Q.Max)
				}
			}
		})
	}
}

// TestLatencyCompressed: the round of compressing clients is measured
// apart, every line reaches every client, and on the nbio engine (which
// compresses) its clients read fewer bytes off the wire per line than the
// plain round's.
func TestLatencyCompressed(t *testing.T) {
	res, err := bench.Latency(context.Background(), bench.LatencyConfig{
		Dir: t.TempDir(), Games: 3, Clients: 6, Rate: 100, Compressed: true,
		Warmup: 200 * time.Millisecond, Duration: time.Second, Log: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	z := res.Compressed
	if z == nil {
		t.Fatal("no round of compressing clients")
	}
	if z.Sent != 100 || z.Q.N != z.Expected || z.Dropped != 0 || len(res.RoundP99) != 1 {
		t.Fatalf("compressing round: sent %d, %d of %d deliveries, %d dropped; plain rounds %d", z.Sent, z.Q.N, z.Expected, z.Dropped, len(res.RoundP99))
	}
	if a := z.Audit; a.Clients != 6 || !a.Kept() || a.Lines < z.Q.N {
		t.Fatalf("compressing round: the delivery contract: %s, for %d deliveries", a, z.Q.N)
	}
	plain, packed := res.WirePerLine(), z.WirePerLine()
	t.Logf("wire bytes per line: %.0f plain, %.0f compressing (engine %s)", plain, packed, bench.DefaultEngine())
	if plain < res.BytesPerLine {
		t.Fatalf("plain round read %.0f wire bytes per line for %.0f payload bytes", plain, res.BytesPerLine)
	}
	if bench.DefaultEngine() == web.WSEngineNbio && packed > 0.8*plain {
		t.Fatalf("compressing clients read %.0f bytes per line against %.0f plain: not compressed", packed, plain)
	}
}

// TestLatencyPrefill checks that the rounds run, and deliver everything,
// after the store took the prefill's lines.
func TestLatencyPrefill(t *testing.T) {
	var log strings.Builder
	res, err := bench.Latency(context.Background(), bench.LatencyConfig{
		Dir: t.TempDir(), Games: 3, Clients: 6, Rate: 100, Prefill: 600,
		Warmup: 200 * time.Millisecond, Duration: time.Second, Log: &log,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "prefilled 600 lines") {
		t.Fatalf("no prefill in the log:\n%s", log.String())
	}
	if res.Sent != 100 || res.Q.N != res.Expected || res.Dropped != 0 {
		t.Fatalf("after the prefill: sent %d, %d of %d deliveries, %d dropped", res.Sent, res.Q.N, res.Expected, res.Dropped)
	}
	if row := res.Rows()[0].Metric; !strings.Contains(row, "grown by 600 lines") {
		t.Fatalf("the first row does not say the store was grown: %s", row)
	}
}

func TestWriteDoc(t *testing.T) {
	tests := []struct {
		name, before string
		want         func(gen string) string
	}{
		{"no file", "", func(gen string) string { return "# Benchmarks\n\n" + gen + "\n" }},
		{"no markers", "hand-written\n", func(gen string) string { return "# Benchmarks\n\n" + gen + "\n" }},
		{"markers kept, text around kept", "# B\n\nintro\n\n" + bench.DocBegin + "\nold table\n" + bench.DocEnd + "\n\nnotes\n",
			func(gen string) string { return "# B\n\nintro\n\n" + gen + "\n\nnotes\n" }},
		{"end marker at end of file", "x\n" + bench.DocBegin + "old" + bench.DocEnd,
			func(gen string) string { return "x\n" + gen }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "b.md")
			if tt.before != "" {
				if err := os.WriteFile(path, []byte(tt.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := bench.WriteDoc(path, "feedbench -quick", []byte("| table |\n")); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			gen := bench.DocBegin + "\nProduced by:\n\n```\nfeedbench -quick\n```\n\n| table |\n" + bench.DocEnd
			if want := tt.want(gen); string(got) != want {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestNoRedisServer runs the stage-based benchmarks with no redis-server
// on PATH: each must return an error that says what to install, not panic
// while cleaning up the stage it could not open.
func TestNoRedisServer(t *testing.T) {
	t.Setenv("PATH", "")
	tests := []struct {
		name string
		run  func() error
	}{
		{"latency", func() error {
			_, err := bench.Latency(context.Background(), bench.LatencyConfig{
				Dir: t.TempDir(), Games: 1, Clients: 1, Rate: 10, Duration: time.Second, Log: io.Discard,
			})
			return err
		}},
		{"fanout", func() error {
			_, err := bench.Fanout(context.Background(), bench.FanoutConfig{
				Dir: t.TempDir(), Games: 1, Clients: 1, Rounds: 1, Every: time.Millisecond, Log: io.Discard,
			})
			return err
		}},
		{"throughput", func() error {
			_, err := bench.Throughput(context.Background(), bench.ThroughputConfig{
				Dir: t.TempDir(), Games: 1, Events: 10, Rounds: 1, Count: 10, Log: io.Discard,
			})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), "redis-server") {
				t.Fatalf("err = %v, want one that names redis-server", err)
			}
		})
	}
}
