package proctest_test

import (
	"context"
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
