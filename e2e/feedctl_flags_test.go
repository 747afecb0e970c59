package e2e_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemojex/feed/internal/testkit/proctest"
)

// TestFeedctlFlagErrorWrittenOnce: a command line the flag package
// refuses, in the global flags or a command's, is written once, with the
// usage, and feedctl exits 2 as the flag package's own ExitOnError does.
// The error was written twice (the flag package's line, the usage, then
// "feedctl: " and the same text) and feedctl exited 1. A refusal of
// feedctl's own (a value under its floor, a stray argument) is still one
// "feedctl: " line and exit status 1; -h exits 2 as before. Nothing here
// reaches Redis: -redis names a port nothing listens on.
func TestFeedctlFlagErrorWrittenOnce(t *testing.T) {
	bin := filepath.Join(proctest.Binaries(t), "feedctl")
	url := "redis://" + proctest.FreeAddr(t) + "/0"
	for _, tt := range []struct {
		name string
		args []string
		err  string // the error's text, to be written once
		exit int
	}{
		{"global value", []string{"-timeout", "abc", "ping"}, `invalid value "abc" for flag -timeout`, 2},
		{"global unknown", []string{"-timout", "1s", "ping"}, "flag provided but not defined: -timout", 2},
		{"command unknown", []string{"dead", "list", "-gam", "g1"}, "flag provided but not defined: -gam", 2},
		{"command value", []string{"dead", "list", "-game", "g1", "-n", "many"}, `invalid value "many" for flag -n`, 2},
		{"under its floor", []string{"-timeout", "1ns", "ping"}, "-timeout 1ns: want at least", 1},
		{"stray argument", []string{"ping", "stray"}, `unexpected argument "stray"`, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"-redis", url}, tt.args...)...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tt.exit {
				t.Fatalf("feedctl %v: %v, want exit status %d\n%s", tt.args, err, tt.exit, out)
			}
			if n := strings.Count(string(out), tt.err); n != 1 {
				t.Errorf("feedctl %v wrote %q %d times, want once:\n%s", tt.args, tt.err, n, out)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		out, err := exec.Command(bin, "-h").CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.HasPrefix(string(out), "usage: feedctl") {
			t.Fatalf("feedctl -h: %v, want the usage and exit status 2:\n%s", err, out)
		}
	})
}
