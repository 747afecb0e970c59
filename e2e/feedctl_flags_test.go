package e2e_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/untrusted"
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

// TestGroupErrorSameInBothBinaries: a -group that the renderer and feedctl
// refuse is refused in the same words by both, event.CheckGroup's sentence:
// feedctl's "feedctl: " line holds it (escaped, as feedctl writes every
// error), the renderer's slog "bad flags" line holds it as its err. Each wrapped the fault in a sentence of its
// own, and feedctl's said more (until 6 Dec 2026). Nothing here reaches
// Redis: both are given a URL of port 1, where nothing listens.
func TestGroupErrorSameInBothBinaries(t *testing.T) {
	bins := proctest.Binaries(t)
	const url = "redis://127.0.0.1:1/0"
	for _, group := range []string{"", "a{b", "}", "host a", "a\tb", "a\x7fb", "a\xffb", strings.Repeat("g", 256)} {
		ctl := exec.Command(filepath.Join(bins, "feedctl"), "-redis", url, "-group", group, "ping")
		ctl.Env = []string{"PATH=" + os.Getenv("PATH"), "REDIS_URL=" + url}
		out, err := ctl.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("feedctl -group %q: %v, want exit status 1\n%s", group, err, out)
		}
		ctlSaid, ok := strings.CutPrefix(strings.TrimSuffix(string(out), "\n"), "feedctl: ")
		if !ok || strings.Contains(ctlSaid, "\n") {
			t.Fatalf("feedctl -group %q wrote %q, want one \"feedctl: \" line", group, out)
		}

		r := exec.Command(filepath.Join(bins, "renderer"), "-redis", url, "-group", group)
		r.Env = []string{"PATH=" + os.Getenv("PATH"), "REDIS_URL=" + url,
			"FEED_HTTP=127.0.0.1:0", "FEED_DB=" + filepath.Join(t.TempDir(), "feed.db")}
		out, err = r.CombinedOutput()
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("renderer -group %q: %v, want exit status 2\n%s", group, err, out)
		}
		_, quoted, ok := strings.Cut(string(out), ` msg="bad flags" err=`)
		if !ok {
			t.Fatalf("renderer -group %q wrote %q, want slog's \"bad flags\" line", group, out)
		}
		quoted, err = strconv.QuotedPrefix(quoted)
		if err != nil {
			t.Fatalf("renderer -group %q: err not quoted in %q: %v", group, out, err)
		}
		rSaid, _ := strconv.Unquote(quoted)
		// feedctl writes every error through untrusted.Escape, which
		// doubles a backslash, as slog's quoting does.
		if untrusted.Escape(rSaid) != ctlSaid || !strings.HasPrefix(rSaid, "-group "+strconv.Quote(group)+": ") {
			t.Errorf("-group %q:\nrenderer: %s\nfeedctl:  %s\nwant the same sentence, naming -group and the name", group, rSaid, ctlSaid)
		}
	}
}
