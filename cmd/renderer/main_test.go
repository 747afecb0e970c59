package main_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	proctest.Cleanup()
	os.Exit(code)
}

// TestLogsOneFormatAndLevel: every line a renderer logs, from its start on
// a new store (the migrations) to its stop ("shutting down", "draining"),
// is slog text at -log-level's level or above with the replica's consumer
// and group, as docs/operations.md ("Logs") says. The store's lines and
// the binary's own went to slog's default logger: the log package's format
// ("2026/12/05 00:32:33 INFO store migration applied"), at info whatever
// -log-level said, and without the consumer's keys; "draining" had no
// group. With Redis down, go-redis's own lines ("redis: 2026/12/05
// 03:46:12 pool.go:770: redis: connection pool: failed to dial …") went
// to stderr in the log package's format, several a second, whatever the
// level. A start that fails (its -http port taken) ends with its reason
// as slog's ERROR "start failed" line, exit status 1: the last line was a
// plain "renderer: web: listen …" (before 6 Dec 2026).
func TestLogsOneFormatAndLevel(t *testing.T) {
	rs := redistest.MustStart(t)
	for _, tt := range []struct {
		name      string
		level     string
		redisDown bool
		portTaken bool     // -http's port is in use: the start fails
		want      []string // messages that must be logged
		wantNone  string   // a level that must not show
	}{
		{"info", "info", false, false, []string{`msg="store migration applied"`, `msg="shutting down"`, `msg="draining: `}, "level=DEBUG"},
		{"warn", "warn", false, false, nil, "level=INFO"},
		{"redis down", "info", true, false, []string{`msg="redis client"`, `msg="shutting down"`}, "level=DEBUG"},
		{"start fails", "info", false, true, []string{`level=ERROR msg="start failed" consumer=r1 group=feed err="web: listen `}, "level=DEBUG"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, ready := rs.URL(), "/readyz"
			if tt.redisDown {
				url = "redis://" + proctest.FreeAddr(t) + "/0" // nothing listens there
				ready = "/healthz"                             // alive, never ready
			}
			args := func(addr string) []string {
				return []string{
					"-redis", url, "-db", filepath.Join(t.TempDir(), "feed.db"), "-http", addr,
					"-consumer", "r1", "-shutdown-delay", "100ms", "-log-level", tt.level,
				}
			}
			var p *proctest.Proc
			if tt.portTaken {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				p = proctest.Start(t, "renderer", "renderer", args(ln.Addr().String()))
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var exit *exec.ExitError
				if err := p.Wait(ctx); !errors.As(err, &exit) || exit.ExitCode() != 1 {
					t.Fatalf("renderer on a taken -http port: %v, want exit status 1", err)
				}
			} else {
				p, _ = proctest.StartHTTP(t, "renderer", "renderer", ready, 200, 30*time.Second, args)
				if tt.redisDown {
					proctest.WaitFor(t, 30*time.Second, func() bool {
						return strings.Contains(p.Output(), `msg="registry beat failed`)
					}, "no failed registry beat logged")
				}
				if err := p.Term(20 * time.Second); err != nil {
					t.Fatalf("SIGTERM: %v, want exit status 0", err)
				}
			}
			out := p.Output()
			for _, line := range strings.Split(out, "\n") {
				if line == "" || strings.HasPrefix(line, "=== ") { // proctest's own lines
					continue
				}
				if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " consumer=r1") || !strings.Contains(line, " group=feed") {
					t.Errorf("not slog text with the replica's keys: %s", line)
				}
				if strings.Contains(line, tt.wantNone) {
					t.Errorf("-log-level %s logged %s", tt.level, line)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("-log-level %s: no %s logged", tt.level, w)
				}
			}
		})
	}
}

// TestFlagErrorIsOneSlogLine: a flag or value the renderer refuses at start
// (exit status 2) is one slog ERROR line on stderr, "bad flags" with its
// err, as every other line of the renderer, and nothing else: an operator
// who greps the logs for level=ERROR finds it. It was a plain "renderer: …"
// line, and for a value the flag package refused that came after the flag
// package's own copy of the error and the usage of every flag. -h still
// prints the usage (exit status 2, as before).
func TestFlagErrorIsOneSlogLine(t *testing.T) {
	bin := filepath.Join(proctest.Binaries(t), "renderer")
	for _, tt := range []struct {
		name string
		args []string
		env  string
		err  string // in the line's err value, as slog quotes it
	}{
		{"not a duration", []string{"-claim-every", "abc"}, "", `err="invalid value \"abc\" for flag -claim-every: parse error"`},
		{"unknown flag", []string{"-claim-evry", "1s"}, "", `err="flag provided but not defined: -claim-evry"`},
		{"under its floor", []string{"-claim-every", "1ns"}, "", `err="-claim-every 1ns: want at least 10ms"`},
		{"bad variable", nil, "FEED_CLAIM_EVERY=abc", `err="$FEED_CLAIM_EVERY: time: invalid duration \"abc\""`},
		{"argument", []string{"stray"}, "", `err="unexpected arguments: [\"stray\"]"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			// Should a case's flags ever be taken, the renderer must not
			// start against the machine's Redis on the default URL, nor
			// write a store into the tree: nothing listens on port 1.
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "REDIS_URL=redis://127.0.0.1:1/0",
				"FEED_HTTP=127.0.0.1:0", "FEED_DB=" + filepath.Join(t.TempDir(), "feed.db")}
			if tt.env != "" {
				cmd.Env = append(cmd.Env, tt.env)
			}
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			var exit *exec.ExitError
			if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("renderer %v: %v, want exit status 2\n%s", tt.args, err, &stderr)
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || stdout.Len() != 0 {
				t.Fatalf("renderer %v wrote %d lines on stderr and %q on stdout, want one slog line:\n%s", tt.args, len(lines), &stdout, &stderr)
			}
			if l := lines[0]; !strings.HasPrefix(l, "time=") || !strings.Contains(l, ` level=ERROR msg="bad flags" `+tt.err+` help="renderer -h"`) {
				t.Errorf("renderer %v: %s\nwant slog's ERROR \"bad flags\" with %s", tt.args, l, tt.err)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		cmd := exec.Command(bin, "-h")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("renderer -h: %v, want exit status 2", err)
		}
		if s := string(out); !strings.HasPrefix(s, "Usage of renderer:\n") || !strings.Contains(s, "\n  -claim-every duration\n") || strings.Contains(s, "level=") {
			t.Errorf("renderer -h printed:\n%s\nwant the usage of every flag", s)
		}
	})
}

// TestHealthzWhileStarting: a renderer whose consumer name is held (a
// crashed holder's lease running out, up to 7 s) answers /healthz 200 and
// /readyz 503 on its bound port while it waits; a page asked meanwhile
// waits, as it did in the listen queue, and is served once the name is
// free and the replica serves on the same port. Until 6 Dec 2026 nothing
// answered the bound port: a liveness probe hung until the wait ended, and
// got a reset when the start failed.
func TestHealthzWhileStarting(t *testing.T) {
	rs := redistest.MustStart(t)
	dir := t.TempDir()
	args := func(addr string) []string {
		return []string{
			"-redis", rs.URL(), "-db", filepath.Join(dir, "feed.db"), "-http", addr,
			"-consumer", "r1", "-shutdown-delay", "0",
		}
	}
	holder, _ := proctest.StartHTTP(t, "holder", "renderer", "/readyz", http.StatusOK, 30*time.Second, args)

	addr := proctest.FreeAddr(t)
	p := proctest.Start(t, "starting", "renderer", args(addr))
	proctest.WaitFor(t, 30*time.Second, func() bool {
		return strings.Contains(p.Output(), "consumer name held; waiting")
	}, "the renderer waiting for its consumer name")

	type answer struct {
		code int
		body string
		err  error
	}
	get := func(path string) answer {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			return answer{err: err}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return answer{err: err}
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, string(b), err}
	}
	for _, tt := range []struct {
		path string
		code int
		body string
	}{
		{"/healthz", http.StatusOK, "ok\n"},
		{"/readyz", http.StatusServiceUnavailable, "not ready\n"},
	} {
		if a := get(tt.path); a.err != nil || a.code != tt.code || a.body != tt.body {
			t.Errorf("GET %s while waiting for the consumer name: %d %q, %v; want %d %q", tt.path, a.code, a.body, a.err, tt.code, tt.body)
		}
	}
	page, live := make(chan answer, 1), make(chan error, 1)
	go func() { page <- get("/games/game-1") }()
	go func() {
		// A page's websocket taken while the replica starts: it waits,
		// and gets its first frame once the replica serves.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws://"+addr+"/games/game-1/live?after=0", nil)
		if err == nil {
			_, _, err = c.Read(ctx)
			c.CloseNow()
		}
		live <- err
	}()
	if p.Exited() {
		t.Fatalf("the renderer gave up its start while probed:\n%s", p.Output())
	}

	// The holder stops: its lease is released, and the waiting renderer
	// takes the name and serves on the port it kept answering.
	if err := holder.Term(20 * time.Second); err != nil {
		t.Fatalf("holder's SIGTERM: %v", err)
	}
	if a := <-page; a.err != nil || a.code != http.StatusOK || !strings.Contains(a.body, "game-1") {
		t.Errorf("GET /games/game-1 asked while starting: %d, %v; want the page once the replica serves", a.code, a.err)
	}
	if err := <-live; err != nil {
		t.Errorf("websocket asked while starting: %v; want its first frame once the replica serves", err)
	}
	proctest.WaitFor(t, 30*time.Second, func() bool {
		a := get("/readyz")
		return p.Exited() || (a.code == http.StatusOK && a.body == "ready\n")
	}, "/readyz 200 once the name is free")
	if p.Exited() {
		t.Fatalf("the renderer exited instead of taking the name:\n%s", p.Output())
	}
	if err := p.Term(20 * time.Second); err != nil {
		t.Errorf("SIGTERM: %v, want exit status 0", err)
	}
}
