package web_test

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/web"
)

// backfillEnv is a server whose game g1 holds about 8 MB of lines: a
// client that reads nothing stalls its backfill on a full socket long
// before the end.
func backfillEnv(t *testing.T, writeTimeout time.Duration) *env {
	t.Helper()
	e := MustOpenEnv(t, func(c *web.Config) {
		c.WriteTimeout = writeTimeout
		c.SendBuffer = 256 << 10
		c.PingEvery = 100 * time.Millisecond // the client answers: never dropped as dead
		c.MaxBacklog = 100000
	})
	g := e.gen("g1")
	for range 60 {
		e.upsert(g.bigChats(t, 8, 16<<10)...)
	}
	return e
}

// waitStalled waits until the backfill has written frames and then none
// for 100 ms: its socket is full and it waits for room.
func waitStalled(t *testing.T, e *env) {
	t.Helper()
	last, changed := int64(-1), time.Now()
	waitFor(t, 10*time.Second, "the backfill stalled on a full socket", func() bool {
		if n := e.srv.Stats().FramesSent; n != last {
			last, changed = n, time.Now()
		}
		return last > 0 && time.Since(changed) >= 100*time.Millisecond
	})
}

// TestCloseDuringBackfill: a server shut down while a client's backfill
// waits for room in its socket still ends that connection (a websocket
// with GoingAway, whatever the engine) and Close returns; the client
// resumes elsewhere from its cursor. On the poller the waiting backfill
// used to return without closing, and Close then waited for the client to
// leave of its own accord.
func TestCloseDuringBackfill(t *testing.T) {
	for _, kind := range []string{"websocket", "event stream"} {
		t.Run(kind, func(t *testing.T) {
			e := backfillEnv(t, time.Minute) // no stall check within the test
			var readOn func() error
			if kind == "websocket" {
				c := e.dialSmallBuffer("g1", 0) // reads nothing until the server closes
				readOn = func() error {
					for {
						if _, err := c.readAny(30 * time.Second); err != nil {
							return err
						}
					}
				}
			} else {
				conn := e.silentStream("g1")
				readOn = func() error {
					_, err := io.Copy(io.Discard, conn)
					return err
				}
			}
			waitStalled(t, e)
			closed := make(chan error, 1)
			go func() { closed <- e.srv.Close() }()
			// The listener closes after the server's context is cancelled:
			// from then on, the backfill sees the shutdown.
			waitFor(t, 5*time.Second, "the listener closed", func() bool {
				c, err := net.DialTimeout("tcp", e.srv.Addr(), time.Second)
				if err == nil {
					c.Close()
				}
				return err != nil
			})
			ended := make(chan error, 1)
			go func() { ended <- readOn() }() // the client reads on, at its pace
			select {
			case err := <-closed:
				if err != nil {
					t.Fatalf("Close: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Close still waiting 20 s after it began: the connection whose backfill it interrupted was never ended")
			}
			select {
			case err := <-ended:
				var ce websocket.CloseError
				if kind == "websocket" && errors.As(err, &ce) && ce.Code != websocket.StatusGoingAway {
					t.Fatalf("the websocket ended with %v, want GoingAway (or the connection dropped)", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the client's connection still open 10 s after Close returned")
			}
		})
	}
}

// TestBackfillPeerGoneNotSlow: a client that closes its connection while
// its backfill waits for room is not a slow client. On the poller the
// backfill went on waiting for room until WriteTimeout, then counted and
// logged the closed tab as slow.
func TestBackfillPeerGoneNotSlow(t *testing.T) {
	// 3 s: the server must see the close before the stalled write's
	// timeout would count the tab as slow, and the stall is seen some
	// time after it began; with 1 s a loaded host could leave it less
	// than that.
	e := backfillEnv(t, 3*time.Second)
	c := e.dialSmallBuffer("g1", 0)
	waitStalled(t, e)
	c.c.CloseNow() // the tab is closed
	waitFor(t, 5*time.Second, "the websocket gone", func() bool { return e.srv.Stats().Clients == 0 })
	// The window in which the stalled backfill would have timed out and
	// counted the closed tab as slow: the deadline is what is tested.
	time.Sleep(e.cfg.WriteTimeout + 500*time.Millisecond)
	if st := e.srv.Stats(); st.SlowCloses != 0 {
		t.Fatalf("a client that closed its connection was counted as slow: SlowCloses=%d", st.SlowCloses)
	}
}
