package web_test

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemojex/feed/web"
)

// TestTailerPassWakesEachWriterOnce: the tailer queues a pass's frames
// without waking any nbio writer, then runs each writer once, after the
// hub's lock is released, however many frames its socket got; a full
// mailbox still drops the client and wakes its writer to close it; a std
// client is signalled at once, as before.
func TestTailerPassWakesEachWriterOnce(t *testing.T) {
	f := web.NewFanout()
	var flushes, wakes [3]int
	mk := func(i int) (func(), func()) {
		return func() { wakes[i]++ }, func() { flushes[i]++ }
	}
	w0, f0 := mk(0)
	a := f.Join(8, w0, f0)
	w1, f1 := mk(1)
	b := f.Join(2, w1, f1) // full after two frames
	std := f.Join(8, nil, nil)

	for seq := int64(1); seq <= 3; seq++ {
		f.Broadcast(seq)
		if flushes != [3]int{} {
			t.Fatalf("a writer ran during the pass (after seq %d): %v", seq, flushes)
		}
	}
	if wakes[0] != 0 {
		t.Fatalf("a fitting client was woken during the pass: %d", wakes[0])
	}
	if !b.Slow() || wakes[1] != 1 {
		t.Fatalf("full client: slow %v, woken %d times; want slow, woken once to close", b.Slow(), wakes[1])
	}
	if f.Clients() != 2 {
		t.Fatalf("hub holds %d clients, want 2 (the full one dropped)", f.Clients())
	}
	select {
	case <-std.Ready():
	default:
		t.Fatal("the std client's writer was not signalled")
	}

	f.Run()
	if flushes[0] != 1 || flushes[1] != 1 {
		t.Fatalf("writers ran %v times after the pass, want once each", flushes[:2])
	}
	if got := a.Drain(); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("queued %v, want [1 2 3]", got)
	}

	// The next pass lists the client again.
	f.Broadcast(4)
	f.Run()
	if flushes[0] != 2 {
		t.Fatalf("second pass: writer ran %d times in all, want 2", flushes[0])
	}
	f.Run() // a pass that queued nothing runs nobody
	if flushes[0] != 2 {
		t.Fatalf("empty pass ran a writer: %d", flushes[0])
	}
}

// TestTailerPassSpills: a pass that lists SpillAt sockets hands their
// writers to another goroutine as it goes (a burst is written while its
// pass still queues frames), and a client that gets a frame after that is
// listed again, so no frame of the pass waits for a later one.
func TestTailerPassSpills(t *testing.T) {
	f := web.NewFanout()
	n := web.SpillAt + 10
	flushes := make([]atomic.Int64, n)
	var first sync.WaitGroup // each writer's first run
	first.Add(n)
	for i := range n {
		f.Join(8, func() {}, func() {
			if flushes[i].Add(1) == 1 {
				first.Done()
			}
		})
	}
	all := func(want int64) bool {
		for i := range flushes {
			if flushes[i].Load() != want {
				return false
			}
		}
		return true
	}

	f.Broadcast(1)
	f.Spill()
	done := make(chan struct{})
	go func() { first.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("spilled writers did not all run within 5s")
	}
	if !all(1) {
		t.Fatal("a spilled writer ran twice")
	}

	f.Broadcast(2) // the same pass: every client is listed again
	f.Run()
	if !all(2) {
		t.Fatal("a client that got a frame after the spill was not written to at the end of the pass")
	}

	few := web.NewFanout()
	ran := 0
	few.Join(8, func() {}, func() { ran++ })
	few.Broadcast(1)
	few.Spill() // under SpillAt: stays with the pass
	if ran != 0 {
		t.Fatal("a pass under SpillAt spilled")
	}
	few.Run()
	if ran != 1 {
		t.Fatalf("writer ran %d times, want 1", ran)
	}
}

// A board frame skips the clients that did not ask for board frames, even
// one that joined after the tailer looked (a whole panel follows for it),
// and such a client keeps the hub on whole panels while it is subscribed.
func TestBoardFrameSkipsWholeClients(t *testing.T) {
	f := web.NewFanout()
	a := f.Join(8, nil, nil)
	if !f.TakeBoards() {
		t.Fatal("a hub of board-taking clients says no")
	}
	old := f.JoinWhole(8)
	if f.TakeBoards() {
		t.Fatal("a hub with a client that takes whole panels only says it takes board frames")
	}
	if n := f.BroadcastBoard(); n != 0 {
		t.Fatalf("%d dropped", n)
	}
	f.Broadcast(7)
	if got := a.Drain(); len(got) != 2 || got[0] != 0 || got[1] != 7 {
		t.Fatalf("the client that asked got seqs %v, want the board frame (0) then line 7", got)
	}
	if got := old.Drain(); len(got) != 1 || got[0] != 7 {
		t.Fatalf("the client that did not ask got seqs %v, want line 7 alone", got)
	}
}
