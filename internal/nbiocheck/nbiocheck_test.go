package nbiocheck_test

import (
	"strings"
	"testing"

	"github.com/lesismal/nbio/mempool"

	"github.com/codemojex/feed/internal/nbiocheck"
)

// The check passes sound use, and reports each misuse nbio's pool would
// turn into one buffer with two owners, with the stack of the last free.
func TestMisuseReported(t *testing.T) {
	for _, tc := range []struct {
		name string
		use  func(a *nbiocheck.Allocator)
		want string // "" for sound use
	}{
		{"sound", func(a *nbiocheck.Allocator) {
			p := a.Malloc(100)
			p = a.Append(p, make([]byte, 5000)...)
			a.Free(p)
			a.Free(a.Malloc(10))
		}, ""},
		{"double free", func(a *nbiocheck.Allocator) {
			p := a.Malloc(100)
			a.Free(p)
			a.Free(p)
		}, "double free"},
		{"append after free", func(a *nbiocheck.Allocator) {
			p := a.Malloc(100)
			*p = (*p)[:0]
			a.Free(p)
			a.Append(p, 'x')
		}, "use after free"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			a := nbiocheck.New(mempool.New(64, 1<<20), func(m string) { got = append(got, m) })
			tc.use(a)
			if tc.want == "" {
				if len(got) != 0 || a.Misuses() != 0 {
					t.Fatalf("sound use reported: %q", got)
				}
				if n := a.Lent(); n != 0 {
					t.Fatalf("%d buffers lent after every free", n)
				}
				return
			}
			if len(got) != 1 || a.Misuses() != 1 {
				t.Fatalf("%d reports (%d counted), want 1: %q", len(got), a.Misuses(), got)
			}
			if !strings.Contains(got[0], tc.want) || !strings.Contains(got[0], "its last free:") || !strings.Contains(got[0], "nbiocheck_test") {
				t.Fatalf("report %q: want %q, the use's stack and the last free's", got[0], tc.want)
			}
		})
	}
}
