package bench_test

import (
	"testing"
	"time"

	"github.com/codemojex/feed/cmd/feedbench/internal/bench"
	"github.com/codemojex/feed/internal/event"
)

// TestAuditDeliveries: the audit counts each kind of breach of the
// delivery contract on the client that saw it, and leaves out a client
// that lost its connection.
func TestAuditDeliveries(t *testing.T) {
	// Two games, four clients: clients 0 and 2 watch g1, 1 and 3 watch g2.
	// In the window, g1 was written a2 and a3, g2 b2; a1 and b1 are older
	// lines each client gets from its backfill.
	d := func(client int, id string, seq int64) bench.Delivery {
		return bench.Delivery{ID: id, Seq: seq, Client: client}
	}
	clean := []bench.Delivery{
		d(0, "a1", 1), d(0, "a2", 3), d(0, "a3", 4),
		d(1, "b1", 2), d(1, "b2", 5),
		d(2, "a1", 1), d(2, "a2", 3), d(2, "a3", 4),
		d(3, "b1", 2), d(3, "b2", 5),
	}
	tests := []struct {
		name                         string
		ds                           []bench.Delivery
		lost                         []int
		clients                      int
		missing, doubled, outOfOrder int
	}{
		{"every line once, in seq order", clean, nil, 4, 0, 0, 0},
		{"a line twice on one socket", append(clean[:len(clean):len(clean)], d(3, "b2", 5)), nil, 4, 0, 1, 0},
		{"a backfilled line again", append(clean[:len(clean):len(clean)], d(1, "b1", 2)), nil, 4, 0, 1, 0},
		{"a line before the one it follows", []bench.Delivery{
			d(0, "a1", 1), d(0, "a3", 4), d(0, "a2", 3),
			d(1, "b1", 2), d(1, "b2", 5),
			d(2, "a1", 1), d(2, "a2", 3), d(2, "a3", 4),
			d(3, "b1", 2), d(3, "b2", 5),
		}, nil, 4, 0, 0, 1},
		{"a line older than the window is not judged", clean[1:], nil, 4, 0, 0, 0},
		{"a window line never sent", append(clean[:2:2], clean[3:]...), nil, 4, 1, 0, 0},
		{"a client without any line", clean[:8], nil, 4, 1, 0, 0},
		{"a lost client is not judged", clean[:8], []int{3}, 3, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := bench.NewWriter(nil, event.NewMinter(time.Now().UnixNano()), []string{"g1", "g2"})
			w.MarkSent("a2", 0)
			w.MarkSent("a3", 0)
			w.MarkSent("b2", 1)
			a := bench.AuditDeliveries(w, 4, tt.lost, tt.ds)
			if a.Clients != tt.clients || a.Missing != tt.missing || a.Doubled != tt.doubled || a.OutOfOrder != tt.outOfOrder {
				t.Fatalf("audit %s; want %d clients, %d missing, %d doubled, %d out of order",
					a, tt.clients, tt.missing, tt.doubled, tt.outOfOrder)
			}
			if a.Kept() != (tt.missing+tt.doubled+tt.outOfOrder == 0) || a.Kept() != (a.First == "") {
				t.Fatalf("audit %s: kept %v", a, a.Kept())
			}
		})
	}
}
