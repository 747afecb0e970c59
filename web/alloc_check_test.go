package web

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lesismal/nbio/mempool"

	"github.com/codemojex/feed/internal/nbiocheck"
)

// TestMain runs the package's tests with nbio's buffers and every frame and
// event the nbio engine writes checked: a buffer freed twice or used after
// its free, or a frame or event that is not well formed, fails the run
// (internal/nbiocheck).
func TestMain(m *testing.M) {
	var (
		mu    sync.Mutex
		first string
	)
	var frames atomic.Int64 // sockets and streams that wrote a bad frame or event
	note := func(misuse string) {
		mu.Lock()
		defer mu.Unlock()
		if first == "" {
			first = misuse
		}
	}
	check := nbiocheck.New(mempool.DefaultMemPool, note)
	nbioAllocator = check
	newWireCheck = func(_ string, deflate bool) func([]byte) {
		return nbiocheck.NewFrames(func(misuse string) { frames.Add(1); note(misuse) }, deflate).Write
	}
	newStreamCheck = func(string) func([]byte) {
		return nbiocheck.NewEvents(func(misuse string) { frames.Add(1); note(misuse) }).Write
	}
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if n, m := check.Misuses(), frames.Load(); n+int(m) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: nbio's buffers were misused %d times and %d sockets or streams wrote a bad frame or event; the first:\n%s\n", n, m, first)
		code = 1
	}
	os.Exit(code)
}
