package web_test

import (
	"slices"
	"testing"
	"time"

	"github.com/codemojex/feed/web"
)

// seqs returns 1..n.
func seqs(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i + 1)
	}
	return s
}

// offerAll offers seqs to m and fails on the first that does not fit.
func offerAll(t *testing.T, m *web.Mailbox, seqs []int64) {
	t.Helper()
	for _, s := range seqs {
		if !m.Offer(s) {
			t.Fatalf("offer %d: mailbox full", s)
		}
	}
}

// The mailbox keeps the offer order, wakes the writer once per drain, is
// bounded by SendQueue unwritten frames (drained ones count until the writer
// takes them), and holds no backing array once drained.
func TestMailbox(t *testing.T) {
	t.Run("fifo, one wake-up", func(t *testing.T) {
		m := web.NewMailbox(16)
		offerAll(t, m, seqs(5))
		select {
		case <-m.Ready():
		default:
			t.Fatal("no wake-up after offers")
		}
		select {
		case <-m.Ready():
			t.Fatal("a second wake-up for the same frames")
		default:
		}
		if got := m.Drain(); !slices.Equal(got, seqs(5)) {
			t.Fatalf("drained %v, want %v", got, seqs(5))
		}
		if got := m.Drain(); len(got) != 0 {
			t.Fatalf("second drain got %v, want nothing", got)
		}
	})

	tests := []struct {
		name  string
		size  int
		took  int     // drained frames the writer has taken before the last offer
		extra []int64 // offered after the drain; the last must not fit
	}{
		{name: "full queue", size: 8},
		{name: "drained, none written", size: 8, extra: []int64{9}},
		{name: "drained, some written", size: 8, took: 3, extra: []int64{9, 10, 11, 12}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := web.NewMailbox(tt.size)
			offerAll(t, m, seqs(tt.size))
			if tt.extra != nil {
				if got := m.Drain(); len(got) != tt.size {
					t.Fatalf("drained %d frames, want %d", len(got), tt.size)
				}
				m.Took(tt.took)
				offerAll(t, m, tt.extra[:len(tt.extra)-1])
			}
			if m.Slow() {
				t.Fatal("slow before the mailbox was full")
			}
			if m.Offer(99) {
				t.Fatalf("offer beyond %d unwritten frames fit", tt.size)
			}
			if !m.Slow() {
				t.Fatal("a full mailbox did not mark the client slow")
			}
			if m.Offer(100) {
				t.Fatal("a second offer to a full mailbox fit")
			}
		})
	}

	t.Run("drained mailbox releases its array", func(t *testing.T) {
		const size = 1024
		m := web.NewMailbox(size)
		offerAll(t, m, seqs(size))
		if c := m.Cap(); c < size {
			t.Fatalf("cap %d with %d frames queued", c, size)
		}
		if got := m.Drain(); !slices.Equal(got, seqs(size)) {
			t.Fatalf("drain of the burst lost the order")
		}
		m.Took(size)
		if c := m.Cap(); c != 0 {
			t.Fatalf("cap %d after draining, want 0 (the burst's array kept)", c)
		}
		offerAll(t, m, []int64{size + 1})
		if c := m.Cap(); c > 4 {
			t.Fatalf("cap %d after one offer following a burst, want a small array", c)
		}
	})
}

// A hub offering while the writer drains: every frame arrives once, in
// order, and no wake-up is lost.
func TestMailboxConcurrent(t *testing.T) {
	const n = 20000
	m := web.NewMailbox(n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := range int64(n) {
			if !m.Offer(s + 1) {
				t.Errorf("offer %d: mailbox full", s+1)
				return
			}
		}
	}()
	// Every offer leaves a wake-up pending or follows one whose drain has
	// not run yet, so waiting on Ready alone must see every frame.
	timeout := time.After(10 * time.Second)
	var got []int64
	for len(got) < n {
		select {
		case <-m.Ready():
		case <-timeout:
			t.Fatalf("got %d of %d frames and no wake-up for the rest", len(got), n)
		}
		b := m.Drain()
		m.Took(len(b))
		got = append(got, b...)
	}
	<-done
	if !slices.Equal(got, seqs(n)) {
		t.Fatalf("frames out of order or doubled (%d received)", len(got))
	}
}
