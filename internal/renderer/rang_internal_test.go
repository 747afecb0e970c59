package renderer

import (
	"context"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
	"github.com/codemojex/feed/web"
)

// TestWebOnlyHearsSameNamedConsumer: a web-only replica (-consume=false)
// serving next to a consuming renderer, both with the default -consumer
// (the host name), must wake on that renderer's rings: it has no handOff,
// so the doorbell is the only thing that moves its tailer before the tail
// period (docs/operations.md, "Web-only replicas and the doorbell").
func TestWebOnlyHearsSameNamedConsumer(t *testing.T) {
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	bell := &Doorbell{Client: rdb, Channel: event.DoorbellChannel("feed")}

	// The web-only replica, serving (live set), named as its host.
	m := NewMain()
	m.Config.Consumer, m.Config.Consume = "host", false
	m.live.Store(new(web.Server))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); bell.Listen(ctx, m.rang) }()
	t.Cleanup(func() { cancel(); <-done })

	// The consuming renderer of the same host rings as "host".
	ringer := NewRinger(bell, "host")
	rctx, rcancel := context.WithCancel(context.Background())
	rdone := make(chan struct{})
	go func() { defer close(rdone); ringer.Run(rctx) }()
	t.Cleanup(func() { rcancel(); <-rdone })

	wait.For(t, 10*time.Second, "the web-only replica to wake on the consumer's ring", func() bool {
		ringer.Request()
		select {
		case <-m.doorbell:
			return true
		default:
			return false
		}
	})
}
