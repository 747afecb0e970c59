package proctest_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/proctest"
)

// recorder is a testing.TB whose failures and cleanups are kept, so that a
// test can look at what Start's cleanup does.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, strings.TrimSpace(format))
}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Failed() bool     { return len(r.errs) > 0 }

// A child that logs MisuseLine fails its test, with the line; one that
// does not leaves it passing.
func TestMisuseFailsTest(t *testing.T) {
	for _, tc := range []struct {
		name, say string
		fail      bool
	}{
		{"misuse", `level=ERROR msg="` + proctest.MisuseLine + `" misuse="nbiocheck: a double free"`, true},
		{"quiet", "level=INFO msg=ready", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			p := proctest.Start(r, "child", "/bin/sh", []string{"-c", "echo '" + tc.say + "'"})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			for i := len(r.cleanups) - 1; i >= 0; i-- {
				r.cleanups[i]()
			}
			if got := len(r.errs) > 0; got != tc.fail {
				t.Fatalf("test failed: %v (%q), want %v", got, r.errs, tc.fail)
			}
		})
	}
}

// StartHTTP starts a server again on another address when its first one is
// taken before the child binds it: here by the test, which listens on it
// first.
func TestStartHTTPAddressTaken(t *testing.T) {
	var taken []string
	flags := func(addr string) []string {
		if len(taken) == 0 {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			taken = append(taken, addr)
		}
		// Nothing listens on port 1: the renderer serves /healthz without
		// Redis.
		return []string{"-redis", "redis://127.0.0.1:1/0", "-db", filepath.Join(t.TempDir(), "feed.db"), "-http", addr}
	}
	p, addr := proctest.StartHTTP(t, "renderer", "renderer", "/healthz", http.StatusOK, 30*time.Second, flags)
	if len(taken) != 1 || addr == taken[0] {
		t.Fatalf("served on %s, taken %v: want a second address", addr, taken)
	}
	if p.Exited() {
		t.Fatalf("exited:\n%s", p.Output())
	}
}
