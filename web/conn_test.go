package web_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/web"
)

func TestCloseSendsGoingAway(t *testing.T) {
	e := MustOpenEnv(t, nil)
	w := e.dial("g1", 0)
	w.next() // state
	waitFor(t, 5*time.Second, "client counted", func() bool { return e.srv.Stats().Clients == 1 })
	start := time.Now()
	if err := e.srv.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Close took %v", d)
	}
	_, err := w.read(5 * time.Second)
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("read after Close: %v, want StatusGoingAway", err)
	}
}

// Pings keep a reading client connected and close one that never answers.
func TestLivePings(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PingEvery = 100 * time.Millisecond; c.WriteTimeout = time.Second })
	// A second to answer, ten ping periods: the reading client's goroutine,
	// starved for 300 ms on a loaded 2-core host under -race, once missed
	// its pong (the timeout, not a sleep, is the margin).
	alive := e.dial("g1", 0)
	// Reading answers pings (coder/websocket replies while a Read is in
	// progress), from its dial on: its pings start then, and the mute
	// client's handshake must not be the reading client's second without
	// a pong. The mute client never reads, so its pongs never come.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, _, err := alive.c.Read(ctx); err != nil {
				return
			}
		}
	}()
	mute := e.dial("g1", 0)
	waitFor(t, 5*time.Second, "two clients", func() bool { return e.srv.Stats().Clients == 2 })
	waitFor(t, 5*time.Second, "the mute client closed", func() bool { return e.srv.Stats().Clients == 1 })
	_ = mute
	if st := e.srv.Stats(); st.PongTimeouts != 1 || st.SlowCloses != 0 {
		t.Fatalf("PongTimeouts = %d, SlowCloses = %d; want the mute client counted as gone, not slow", st.PongTimeouts, st.SlowCloses)
	}
	// Several ping periods later the reading client is still there: an
	// invariant checked over a window, so the loop runs out its time.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if n := e.srv.Stats().Clients; n != 1 {
			t.Fatalf("clients = %d, want the reading client kept", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A websocket outlives the server's ReadTimeout for plain requests.
func TestLiveOutlivesReadTimeout(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.ReadTimeout = 100 * time.Millisecond })
	w := e.dial("g1", 0)
	w.next() // state
	// Let the plain-request deadline pass (not synchronisation: the
	// passing time is what is tested).
	time.Sleep(400 * time.Millisecond)
	evs := e.gen("g1").chats(t, 1)
	e.upsert(evs...)
	if got := w.lines(1); got[0].ID != evs[0].EvtID {
		t.Fatalf("got %v", ids(got))
	}
}

// A failing store costs errors, not a crash: the tailer counts and backs
// off, pages answer 500, a new websocket is closed with an internal error.
func TestStoreFailure(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.TailEvery = 20 * time.Millisecond })
	w := e.dial("g1", 0)
	w.next() // state: the hub exists, so the tailer reads lines
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "tail errors counted", func() bool { return e.srv.Stats().TailErrors > 0 })
	if resp, _ := e.get("/games/g1"); resp.StatusCode != 500 {
		t.Fatalf("page with the store closed: %d, want 500", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, e.wsURL("g1", 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	_, _, err = c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusInternalError {
		t.Fatalf("read: %v, want an internal-error close", err)
	}
}

// A request stalled mid-headers does not turn Close into an error: it is
// cut once the 5 seconds of draining are over.
func TestCloseCutsStalledRequest(t *testing.T) {
	e := MustOpenEnv(t, nil)
	conn, err := net.Dial("tcp", e.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatalf("the stalled connection is still open after Close (read %d bytes)", n)
	}
}

// A server closed right after it opened stops: nbio 1.6.8's poller misses a
// stop that comes before its loop runs, and spins with Close waiting on it,
// unless Open waits for the loop (web/pollstart.go). Without that wait this
// failed by the 10th, 23rd and 213th server of three runs under -race.
func TestCloseRightAfterOpen(t *testing.T) {
	db := MustOpenStore(t)
	for i := range 500 {
		srv, err := web.Open(web.Config{Addr: "127.0.0.1:0", Store: db, Logger: testLogger(), WSEngine: os.Getenv("CODEMOJEX_WS_ENGINE")})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		closed := make(chan error, 1)
		go func() { closed <- srv.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("close %d: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("close %d: still waiting after 10s", i)
		}
	}
}
