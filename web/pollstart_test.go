package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lesismal/nbio/nbhttp"

	"github.com/codemojex/feed/web"
)

// TestAwaitPollersEveryPoller: with several pollers, each one's loop must
// have run before AwaitPollers returns, or a Stop right after it hangs
// (nbio 1.6.8, see web/pollstart.go). A server gets NumCPU/4 pollers, one
// on a small machine; this covers the sockets' spread over more.
func TestAwaitPollersEveryPoller(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("pollers=%d", n), func(t *testing.T) {
			for i := range 200 {
				eng := nbhttp.NewEngine(nbhttp.Config{Name: "test", NPoller: n, SupportServerOnly: true})
				if err := eng.Start(); err != nil {
					t.Fatalf("start %d: %v", i, err)
				}
				if err := web.AwaitPollers(eng, 10*time.Second); err != nil {
					t.Fatalf("engine %d: %v", i, err)
				}
				stopped := make(chan struct{})
				go func() { eng.Stop(); close(stopped) }()
				select {
				case <-stopped:
				case <-time.After(10 * time.Second):
					t.Fatalf("engine %d: Stop still waiting after 10s", i)
				}
			}
		})
	}
}
