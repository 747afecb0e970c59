package web_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/codemojex/feed/web"
)

// TestCloseWaitsForBackfill: Close returns only once every socket's
// backfill has returned, on both engines, for a websocket and an event
// stream, even when the peer went during it. On the nbio engine the
// socket's slot went back at the peer's close, while its backfill (on the
// handler's goroutine, or the stream's) could still be reading the store:
// Close returned, and the replica closed the store under it.
func TestCloseWaitsForBackfill(t *testing.T) {
	for _, how := range []string{"websocket", "event stream"} {
		t.Run(how, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			var once, released sync.Once
			restore := web.SetTestHookSubscribed(func(string) {
				once.Do(func() {
					close(entered)
					<-release // the backfill, held up between subscription and store read
				})
			})
			defer restore()
			letGo := func() { released.Do(func() { close(release) }) }
			defer letGo()
			e := MustOpenEnv(t, nil)
			var hangUp func()
			if how == "websocket" {
				w := e.dial("g1", 0)
				hangUp = func() { w.c.CloseNow() }
			} else {
				c := e.stream("g1", 0)
				hangUp = c.cancel
			}
			select {
			case <-entered:
			case <-time.After(5 * time.Second):
				t.Fatal("the socket's backfill never began")
			}
			// The peer goes while its backfill is held up. On nbio its close
			// callback gives the socket's slot back at once.
			hangUp()
			if e.cfg.WSEngine != web.WSEngineStd {
				waitFor(t, 5*time.Second, "the peer's close seen", func() bool {
					st := e.srv.Stats()
					return st.Clients == 0 && st.EventStreams == 0
				})
			}
			closed := make(chan error, 1)
			go func() { closed <- e.srv.Close() }()
			// The window in which Close must not return: the backfill is
			// held up for it, so the wait is what is tested.
			select {
			case err := <-closed:
				t.Fatalf("Close returned (%v) while a backfill still ran", err)
			case <-time.After(300 * time.Millisecond):
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Log(string(buf[:n]))
			}
			letGo()
			select {
			case <-closed:
			case <-time.After(10 * time.Second):
				t.Fatal("Close did not return once the backfill could go on")
			}
		})
	}
}
