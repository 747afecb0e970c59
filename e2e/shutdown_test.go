package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/proc"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestGracefulStopDuringOutage: a renderer SIGTERMed while Redis does not
// answer exits 0 within its shutdown bound, and its restart with the same
// name serves again once Redis is back.
func TestGracefulStopDuringOutage(t *testing.T) {
	c := newCluster(t)
	r := c.start("r1")
	w := c.writer("outage")
	w.chat("ada", "before the outage")
	c.waitStored("outage", w.ids, 10*time.Second)

	c.redis.Pause(t)
	start := time.Now()
	// 10s of handler grace and 3s for calls in flight at most; 20s is the
	// point where a stuck shutdown would be SIGKILLed by an operator.
	err := r.Term(20 * time.Second)
	took := time.Since(start)
	c.redis.Resume(t)
	if err != nil {
		t.Fatalf("SIGTERM during an outage: %v (after %v)", err, took)
	}
	t.Logf("renderer stopped in %v during the outage", took)

	c.restart(r)
	w.chat("ada", "after the outage")
	c.waitStored("outage", w.ids, 15*time.Second)
}

// TestTermWhileStarting: a renderer stopped while it waits for its consumer
// name (held by a live process) exits 0: a stop, not a failed one
// (docs/operations.md, "Stopping"). It used to exit 1.
func TestTermWhileStarting(t *testing.T) {
	c := newCluster(t)
	c.start("r1")
	p := proctest.Start(t, "r1-again", "renderer", []string{
		"-redis", c.redisURL(), "-db", c.dbPath, "-http", proctest.FreeAddr(t),
		"-group", c.group, "-consumer", "r1",
	})
	proctest.WaitFor(t, 10*time.Second, func() bool { return strings.Contains(p.Output(), "consumer name held") }, "the second r1 waiting for its name")
	if err := p.Term(10 * time.Second); err != nil {
		t.Fatalf("SIGTERM while starting: %v, want exit status 0\n%s", err, p.Output())
	}
}

// TestTermDrains: on SIGTERM a renderer with the default -shutdown-delay
// answers /readyz 503 at once and goes on serving, pages, websockets and
// new lines, for a few seconds before its listener closes, so a load
// balancer sees it fail and sends no new clients to a closed port; then it
// exits 0. It used to close its listener milliseconds after /readyz failed.
func TestTermDrains(t *testing.T) {
	c := newCluster(t)
	w := c.writer("drain")
	w.chat("ada", "before the stop")
	// The harness's renderers stop without a delay (FEED_SHUTDOWN_DELAY);
	// this one has the default.
	p, addr := proctest.StartHTTP(t, "r1", "renderer", "/readyz", http.StatusOK, 20*time.Second, func(addr string) []string {
		return []string{
			"-redis", c.redisURL(), "-db", c.dbPath, "-http", addr,
			"-group", c.group, "-consumer", "r1", "-log-level", "debug",
		}
	})
	r := &renderer{Proc: p, name: "r1", addr: addr}
	c.waitStored("drain", w.ids, 10*time.Second)
	ws := mustDial(t, r, "drain", 0)
	if err := ws.readUntil(w.ids, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	status := func(path string) (int, error) {
		resp, err := http.Get(r.url(path))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if err := syscall.Kill(p.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	termed := time.Now()
	var last string
	var gone error
	wait.Until(t, 10*time.Second, func() bool {
		code, err := status("/readyz")
		if err != nil {
			gone = err
			return true
		}
		last = fmt.Sprint(code)
		return code == http.StatusServiceUnavailable
	}, func() string { return "/readyz to answer 503 after SIGTERM (last: " + last + ")" })
	if gone != nil {
		t.Fatalf("the renderer stopped serving %v after SIGTERM, before /readyz answered 503: %v", time.Since(termed), gone)
	}
	t.Logf("/readyz answered 503 %v after SIGTERM", time.Since(termed).Round(time.Millisecond))

	// Draining: everything but /readyz is served as before.
	for _, path := range []string{"/healthz", "/games/drain"} {
		if code, err := status(path); code != http.StatusOK {
			t.Errorf("%s while draining: %d (%v), want 200", path, code, err)
		}
	}
	w.chat("ada", "while draining")
	if err := ws.readUntil(w.ids, 10*time.Second); err != nil {
		t.Errorf("a line written while draining: %v", err)
	}
	late := mustDial(t, r, "drain", 0)
	if err := late.readUntil(w.ids, 10*time.Second); err != nil {
		t.Errorf("a websocket opened while draining: %v", err)
	}
	drained := time.Since(termed)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("exit after SIGTERM: %v, want status 0", err)
	}
	if took := time.Since(termed); took < 5*time.Second {
		t.Errorf("exited %v after SIGTERM, before the default -shutdown-delay (5s) ran out", took)
	}
	t.Logf("served while draining for at least %v; exited %v after SIGTERM", drained.Round(time.Millisecond), time.Since(termed).Round(time.Millisecond))
}

// TestTermDuringInit: a renderer, or a gamesim, SIGTERMed while its
// packages still initialise, before main runs, stops as cleanly as one
// stopped a moment later: exit status 0, saying so. They caught SIGINT and
// SIGTERM from main only, and one that came in the first 30 to 150 ms
// after exec killed them (status 143), so an orchestrator that stopped a
// replica it had just started saw a failure (docs/operations.md,
// "Stopping").
//
// The signal goes out as soon as the first package outside the standard
// library has initialised: GODEBUG=inittrace=1 has the runtime say so on
// stderr, and the test's copy of that line sends it. That is
// internal/stopsignal, which catches them from then on; without it, a
// third-party package with most of the init still to come. Before it no
// Go code can catch a signal (the runtime's own start, the standard
// library's first packages): the window docs/operations.md owns up to.
func TestTermDuringInit(t *testing.T) {
	const runs = 20
	for _, tc := range []struct {
		bin  string
		args func(dir string) []string
		said string
	}{
		{"renderer", func(dir string) []string {
			// Nothing listens on port 1: never the machine's Redis.
			return []string{"-redis", "redis://127.0.0.1:1", "-db", filepath.Join(dir, "feed.db"), "-http", "127.0.0.1:0"}
		}, `msg="stopped while starting"`},
		{"gamesim", func(string) []string {
			return []string{"-redis", "redis://127.0.0.1:1", "-events", "0"}
		}, "gamesim: stopped while connecting to Redis; nothing written"},
	} {
		t.Run(tc.bin, func(t *testing.T) {
			bin := filepath.Join(proctest.Binaries(t), tc.bin)
			first := map[string]int{}
			for i := range runs {
				pkg, out, err := termAtFirstInit(t, bin, tc.args(t.TempDir()))
				first[pkg]++
				if err != nil || !strings.Contains(out, tc.said) {
					t.Fatalf("run %d: SIGTERM once %s had initialised: %v, want exit status 0 and %q\n%s", i+1, pkg, err, tc.said, tailString(out, 4000))
				}
				if pkg != stopsignalPkg {
					t.Fatalf("run %d: the first package outside the standard library to initialise was %s, want %s, which catches the signals", i+1, pkg, stopsignalPkg)
				}
			}
			t.Logf("%d clean stops; signalled once these had initialised: %v", runs, first)
		})
	}
}

const stopsignalPkg = "github.com/codemojex/feed/internal/stopsignal"

// termAtFirstInit runs bin with args and GODEBUG=inittrace=1, sends it
// SIGTERM from the write of the first trace line of a package outside the
// standard library, and returns that package, the output and the exit
// error.
func termAtFirstInit(t *testing.T, bin string, args []string) (pkg, out string, err error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	w := &initWatch{}
	cmd.Stdout, cmd.Stderr = w, w
	// Under w.mu, so that the first line's write finds w.p set.
	w.mu.Lock()
	p, err := proc.Start(cmd)
	if err != nil {
		w.mu.Unlock()
		t.Fatal(err)
	}
	w.p = p
	w.mu.Unlock()
	t.Cleanup(p.Kill)
	select {
	case <-p.Done():
	case <-time.After(60 * time.Second):
		p.Kill()
		t.Fatalf("%s did not exit within 60s\n%s", bin, tailString(w.output(), 4000))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pkg == "" {
		t.Fatalf("%s exited before the first package outside the standard library had initialised: %v\n%s", bin, p.Err(), tailString(w.out.String(), 4000))
	}
	return w.pkg, w.out.String(), p.Err()
}

// initWatch is the output of a process run with GODEBUG=inittrace=1: it
// SIGTERMs the process at the first "init PKG @…" line whose PKG is not
// the standard library's (its first element has a dot).
type initWatch struct {
	mu  sync.Mutex
	p   *proc.Process
	out bytes.Buffer
	pkg string // the package of that line, once seen
}

func (w *initWatch) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	start := w.out.Len()
	w.out.Write(b)
	if w.pkg != "" {
		return len(b), nil
	}
	// Lines complete from the start of the one b continues.
	all := w.out.Bytes()
	from := bytes.LastIndexByte(all[:start], '\n') + 1
	for _, line := range strings.Split(string(all[from:]), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "init" || !strings.HasPrefix(f[2], "@") {
			continue
		}
		if first, _, _ := strings.Cut(f[1], "/"); strings.Contains(first, ".") {
			w.pkg = f[1]
			_ = w.p.Signal(syscall.SIGTERM)
			break
		}
	}
	return len(b), nil
}

func (w *initWatch) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// TestSecondTermDuringCloseOfStart: a renderer stopped while it starts
// closes what it opened, and a second SIGTERM meanwhile kills it at once,
// as a second one does while it drains ("Stopping": a second signal kills
// at once). That Close kept the signals caught and ignored the second one.
// A client's connection that has sent half a request holds the Close for
// the 5 s Starting gives requests in flight.
func TestSecondTermDuringCloseOfStart(t *testing.T) {
	c := newCluster(t)
	c.start("r1")
	addr := proctest.FreeAddr(t)
	p := proctest.Start(t, "r1-again", "renderer", []string{
		"-redis", c.redisURL(), "-db", c.dbPath, "-http", addr,
		"-group", c.group, "-consumer", "r1",
	})
	proctest.WaitFor(t, 10*time.Second, func() bool { return strings.Contains(p.Output(), "consumer name held") }, "the second r1 waiting for its name")

	half, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	if _, err := half.Write([]byte("GET / HTTP/1.1\r\nHost: feed\r\n")); err != nil {
		t.Fatal(err)
	}
	// Accepted in order: once a later connection is answered, the half
	// request's was accepted too, and the Close waits for it.
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	if err := syscall.Kill(p.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, 10*time.Second, func() bool { return p.Exited() || strings.Contains(p.Output(), `msg="shutting down"`) }, "the stopped r1 to begin its Close")
	if p.Exited() {
		t.Fatalf("exited (%v) after the first SIGTERM without saying it was shutting down, before a second could be sent\n%s", p.Wait(context.Background()), tailString(p.Output(), 4000))
	}
	if err := syscall.Kill(p.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = p.Wait(ctx)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("exit after a second SIGTERM during the Close of a stopped start: %v, want killed by that SIGTERM\n%s", err, tailString(p.Output(), 4000))
	}
}
