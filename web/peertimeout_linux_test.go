package web_test

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codemojex/feed/internal/testkit/tmpfs"
	"github.com/codemojex/feed/internal/testkit/wait"
	"github.com/codemojex/feed/web"
)

// wire is a network namespace joined to this one by a veth pair: a
// client dialling from inside it can be cut off (its end of the pair set
// down) as a phone going out of range is, with no FIN and no RST, which
// loopback cannot do.
type wire struct {
	tb         testing.TB
	ns         string
	host, peer string // interface names: this side, the namespace's side
	hostIP     string
}

// mustWire makes a wire, and removes it when the test ends. It needs root
// and ip(8); without them the test skips, or fails under
// CODEMOJEX_REQUIRE_ROOT (as CI sets it).
func mustWire(tb testing.TB) *wire {
	tb.Helper()
	err := tmpfs.Usable() // root on Linux, as for a tmpfs
	if err == nil {
		_, err = exec.LookPath("ip")
	}
	if err != nil {
		tmpfs.SkipOrFail(tb, fmt.Errorf("a network namespace needs root and ip(8): %w", err))
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	w := &wire{tb: tb, ns: "cmx" + id, host: "cmx" + id + "h", peer: "cmx" + id + "p"}
	net3 := fmt.Sprintf("10.213.%d", b[0])
	w.hostIP = net3 + ".1"
	tb.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", w.host).Run()
		_ = exec.Command("ip", "netns", "del", w.ns).Run()
	})
	for _, args := range [][]string{
		{"netns", "add", w.ns},
		{"link", "add", w.host, "type", "veth", "peer", "name", w.peer},
		{"link", "set", w.peer, "netns", w.ns},
		{"addr", "add", w.hostIP + "/30", "dev", w.host},
		{"link", "set", w.host, "up"},
		{"-n", w.ns, "addr", "add", net3 + ".2/30", "dev", w.peer},
		{"-n", w.ns, "link", "set", w.peer, "up"},
		{"-n", w.ns, "link", "set", "lo", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return w
}

// dial connects to addr from inside the namespace: the socket is made on a
// thread moved into it, and belongs to it from then on.
func (w *wire) dial(addr string) net.Conn {
	w.tb.Helper()
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The thread is not unlocked: should the move back fail, it dies
		// with this goroutine instead of serving others in the namespace.
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			done <- result{err: err}
			return
		}
		defer self.Close()
		ns, err := os.Open("/run/netns/" + w.ns)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("setns back: %w", err)}
			return
		}
		runtime.UnlockOSThread()
		done <- result{c, err}
	}()
	r := <-done
	if r.err != nil {
		w.tb.Fatalf("dial %s from %s: %v", addr, w.ns, r.err)
	}
	w.tb.Cleanup(func() { r.c.Close() })
	return r.c
}

// cut sets the namespace's end of the pair down: from then on nothing the
// server sends is delivered or acknowledged, and no FIN or RST comes back.
func (w *wire) cut() {
	w.tb.Helper()
	if out, err := exec.Command("ip", "-n", w.ns, "link", "set", w.peer, "down").CombinedOutput(); err != nil {
		w.tb.Fatalf("ip link set down: %v: %s", err, out)
	}
}

// TestVanishedStreamClientDropped: an event stream whose client vanishes
// (its network gone, no FIN or RST) ends within the peer timeout after
// the server's next write, and leaves the server's count; a stream on the
// same server whose client is still there goes on.
func TestVanishedStreamClientDropped(t *testing.T) {
	w := mustWire(t)
	e := MustOpenEnv(t, func(c *web.Config) {
		c.Addr = w.hostIP + ":0"
		c.AdminToken = "test" // listening beyond loopback needs one
		c.PeerTimeout = 2 * time.Second
		c.PingEvery = 250 * time.Millisecond
	})
	addr := e.srv.Addr()
	c := w.dial(addr)
	fmt.Fprintf(c, "GET /games/g/events?after=0 HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	status, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200") {
		t.Fatalf("status %q, %v", status, err)
	}
	// Through the headers, the ping that comes with them and the first of
	// the pings every PingEvery: the stream is live.
	for pings := 0; pings < 2; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if line == "event: ping\n" {
			pings++
		}
	}
	stay := e.stream("g", 0) // over loopback, never cut
	wait.For(t, 5*time.Second, "two streams open", func() bool { return e.srv.Stats().EventStreams == 2 })

	w.cut()
	cutAt := time.Now()
	wait.For(t, 20*time.Second, "the vanished client's stream dropped", func() bool { return e.srv.Stats().EventStreams == 1 })
	t.Logf("dropped %v after the cut (peer timeout 2s, pings every 250ms)", time.Since(cutAt).Round(100*time.Millisecond))
	select {
	case err := <-stay.err:
		t.Fatalf("the stream still reachable ended too: %v", err)
	default:
	}
}
