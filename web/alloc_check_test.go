package web

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/lesismal/nbio/mempool"

	"github.com/codemojex/feed/internal/nbiocheck"
)

// TestMain runs the package's tests with nbio's buffers checked: a buffer
// freed twice or used after its free fails the run (internal/nbiocheck).
func TestMain(m *testing.M) {
	var (
		mu    sync.Mutex
		first string
	)
	check := nbiocheck.New(mempool.DefaultMemPool, func(misuse string) {
		mu.Lock()
		defer mu.Unlock()
		if first == "" {
			first = misuse
		}
	})
	nbioAllocator = check
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if n := check.Misuses(); n > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: nbio's buffers were misused %d times; the first:\n%s\n", n, first)
		code = 1
	}
	os.Exit(code)
}
