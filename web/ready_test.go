package web_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemojex/feed/web"
)

// getStatus GETs path from the loopback source address ip and returns the
// status code.
func getStatus(ctx context.Context, e *env, ip, path string) (int, error) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext,
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url(path), nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestReadyzSharesOneCheck checks that concurrent readiness probes from one
// address are neither refused by the per-address request cap nor each a
// check of their own: they share one, which the probe that started it runs
// to the end even when its own client hangs up.
func TestReadyzSharesOneCheck(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	var calls atomic.Int64
	e := MustOpenEnv(t, func(c *web.Config) {
		c.MaxRequestsPerClient = 2
		c.Ready = func(ctx context.Context) error {
			calls.Add(1)
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})

	// The first probe starts the check, then its client goes away.
	leaderCtx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	leaderDone := make(chan struct{})
	go func() { defer close(leaderDone); getStatus(leaderCtx, e, "127.0.0.1", "/readyz") }()
	waitFor(t, 10*time.Second, "the first probe's check running", func() bool { return calls.Load() == 1 })

	const n = 6 // three times the cap
	codes := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], errs[i] = getStatus(context.Background(), e, "127.0.0.1", "/readyz")
		}()
	}
	waitFor(t, 10*time.Second, "every probe waiting on the one check", func() bool { return e.srv.ReadyWaiting() == n })
	hangUp()
	<-leaderDone
	free()
	wg.Wait()
	for i := range n {
		if errs[i] != nil || codes[i] != http.StatusOK {
			t.Fatalf("probe %d: %d %v, want 200", i, codes[i], errs[i])
		}
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("%d checks for %d probes, want 1", got, n+1)
	}
}

// TestReadyzRechecks checks that a result is not kept: a failed check, or a
// check that panicked, is followed by a new one, and the probes see the
// replica become ready.
func TestReadyzRechecks(t *testing.T) {
	tests := []struct {
		name  string
		first func() error
		code  int // the first probe's answer
	}{
		{"failed check", func() error { return errors.New("redis: down") }, http.StatusServiceUnavailable},
		{"panicked check", func() error { panic("ready: boom") }, http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			e := MustOpenEnv(t, func(c *web.Config) {
				c.Ready = func(context.Context) error {
					if calls.Add(1) == 1 {
						return tt.first()
					}
					return nil
				}
			})
			// A probe that is not answered in 2 s counts as a miss, as a
			// load balancer's would: a check left in flight for good must
			// fail the test, not hang it.
			probe := func() (int, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				return getStatus(ctx, e, "127.0.0.1", "/readyz")
			}
			if code, err := probe(); code != tt.code {
				t.Fatalf("first probe: %d %v, want %d", code, err, tt.code)
			}
			waitFor(t, 10*time.Second, "a probe answered ready", func() bool {
				code, _ := probe()
				return code == http.StatusOK
			})
			if got := calls.Load(); got < 2 {
				t.Fatalf("%d checks, want a second one", got)
			}
		})
	}
}

// TestDrainFailsReadyOnly: after Drain, /readyz answers 503 at once, even
// with a passing check's result still fresh, while pages, open websockets
// and new ones are served as before: a load balancer takes the replica out
// before Close (Main.Shutdown's drain, -shutdown-delay).
func TestDrainFailsReadyOnly(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.Ready = func(context.Context) error { return nil } })
	g := e.gen("g1")
	e.upsert(g.chats(t, 1)...)
	ws := e.dial("g1", 0)
	ws.lines(1)
	if resp, body := e.get("/readyz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz before Drain: %d %q", resp.StatusCode, body)
	}

	e.srv.Drain()
	// Within readyMaxAge of the passing check: its result must not answer.
	if resp, body := e.get("/readyz"); resp.StatusCode != http.StatusServiceUnavailable || body != "not ready: web: shutting down\n" {
		t.Fatalf("/readyz after Drain: %d %q, want 503 %q", resp.StatusCode, body, "not ready: web: shutting down\n")
	}
	for _, path := range []string{"/healthz", "/games/g1", "/"} {
		if resp, body := e.get(path); resp.StatusCode != http.StatusOK {
			t.Errorf("%s while draining: %d %q, want 200", path, resp.StatusCode, body)
		}
	}
	e.upsert(g.chats(t, 1)...)
	ws.lines(1)
	late := e.dial("g1", 0)
	late.lines(2)
}
