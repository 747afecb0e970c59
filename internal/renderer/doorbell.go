package renderer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/backoff"
)

// Doorbell is the hint the renderers of one host give each other that the
// host's store moved: SPUBLISH after each committed batch on the group's
// channel (event.DoorbellChannel), SSUBSCRIBE to wake the web tailer. It is
// sharded pub/sub so that on a Redis Cluster a ring costs the one shard
// that owns the channel's slot, not every node as PUBLISH would; on a
// single node it behaves as PUBLISH does. A lost ring costs at most one
// tail period, so nothing here retries a ring.
type Doorbell struct {
	Client  redis.UniversalClient
	Channel string
	Logger  *slog.Logger
	// Health is how long Listen waits for a message before it pings the
	// subscription to check it is still alive (default 10s).
	Health time.Duration
}

// Ring rings the doorbell; from names the ringer (for logs).
func (d *Doorbell) Ring(ctx context.Context, from string) error {
	return d.Client.SPublish(ctx, d.Channel, from).Err()
}

// Ringer rings a Doorbell from a goroutine of its own, on request, so that
// the committer does not wait for Redis: a ring is one more round trip in
// the consumer's loop, before its XACK and its next read. Requests that
// come while a ring is on its way are answered by the next one: a ring
// only says that the store moved, and a peer reads on from its own cursor.
type Ringer struct {
	bell *Doorbell
	from string
	req  chan struct{}
}

// NewRinger returns a Ringer that rings bell as from once Run runs.
func NewRinger(bell *Doorbell, from string) *Ringer {
	return &Ringer{bell: bell, from: from, req: make(chan struct{}, 1)}
}

// Request asks for a ring after this moment, without waiting.
func (r *Ringer) Request() {
	select {
	case r.req <- struct{}{}:
	default: // a ring is asked for already, and will come after this moment
	}
}

// Run rings after each request until ctx ends. Each ring has a second,
// ctx or not, so that the last commits before a shutdown are still rung.
func (r *Ringer) Run(ctx context.Context) {
	for {
		select {
		case <-r.req:
		case <-ctx.Done():
			select {
			case <-r.req: // the last one
			default:
				return
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		if err := r.bell.Ring(rctx, r.from); err != nil && r.bell.Logger != nil {
			r.bell.Logger.Debug("doorbell ring failed", "err", err)
		}
		cancel()
	}
}

// Listen calls wake with the ringer's name for every ring until ctx ends. It subscribes again
// whenever the subscription is lost: a connection error, or the server's
// sunsubscribe when the channel's slot migrates to another master or its
// master becomes a replica (a subscription stays on the node it was made
// on, so it must be made again on the new owner).
func (d *Doorbell) Listen(ctx context.Context, wake func(from string)) {
	health := d.Health
	if health <= 0 {
		health = 10 * time.Second
	}
	// Quick the first time (a slot moved), capped, with jitter so that the
	// renderers of a host do not all hit a recovering node at once.
	bo := backoff.Backoff{Min: 50 * time.Millisecond, Max: 5 * time.Second}
	for ctx.Err() == nil {
		err := d.listen(ctx, wake, health, bo.Reset)
		if ctx.Err() != nil {
			return
		}
		if d.Logger != nil {
			d.Logger.Debug("doorbell subscription lost; subscribing again", "err", err)
		}
		// A cluster client learns the new owner of the slot from a fresh
		// map; without it the subscription would go back to the old node.
		if cc, ok := d.Client.(*redis.ClusterClient); ok {
			cc.ReloadState(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(bo.Next()):
		}
	}
}

// errResubscribe says the server ended the subscription.
var errResubscribe = errors.New("doorbell: the server ended the subscription")

// listen holds one subscription until it fails or ctx ends; ok is called
// once the subscription is confirmed.
func (d *Doorbell) listen(ctx context.Context, wake func(from string), health time.Duration, ok func()) error {
	ps := d.Client.SSubscribe(ctx)
	defer ps.Close()
	// A blocked receive does not see ctx end; closing the subscription
	// ends it.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	if err := ps.SSubscribe(ctx, d.Channel); err != nil {
		return err
	}
	pinged := false // a ping is out and nothing has come since
	for {
		msg, err := ps.ReceiveTimeout(ctx, health)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			var nerr interface{ Timeout() bool }
			if errors.As(err, &nerr) && nerr.Timeout() {
				// A hung node (SIGSTOP, a partition) takes the ping into
				// its socket buffer and never answers: no answer within
				// health is a lost subscription.
				if pinged {
					return fmt.Errorf("doorbell: no answer to a ping within %v", health)
				}
				// Quiet for a while: make sure the connection is alive.
				if err := ps.Ping(ctx); err != nil {
					return err
				}
				pinged = true
				continue
			}
			return err
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "ssubscribe":
				ok()
			case "sunsubscribe":
				return errResubscribe
			}
		case *redis.Message:
			wake(m.Payload)
		case *redis.Pong:
		}
	}
}
