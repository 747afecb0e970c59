package feed

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/codemojex/feed/internal/backoff"
)

// quiet marks a turn's error that another log line already reports.
type quiet struct{ error }

func (q quiet) Unwrap() error { return q.error }

// run is the loop goroutine. Each turn: re-discover streams when due, retry
// failed acks, open group doors, recover own pending lists, claim idle
// entries when due, take the census when due, then read new entries. Any
// error of a turn backs off (capped, with jitter) before the next one: no
// failure makes the loop spin, and none makes it exit.
func (c *Consumer) run() {
	defer func() {
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
	}()
	for !c.stopping() {
		if err := c.turn(); err != nil {
			if c.stopping() {
				return // Close cancelled the call; not a failure
			}
			d := c.loopBackoff.Next()
			level := slog.LevelWarn
			if errors.As(err, new(quiet)) {
				level = slog.LevelDebug
			}
			c.log.Log(c.ctx, level, "consumer loop error; backing off", "err", err, "backoff", d.Round(time.Millisecond))
			if !c.sleep(d) {
				return
			}
			continue
		}
		c.loopBackoff.Reset()
	}
}

func (c *Consumer) turn() error {
	now := time.Now()
	if now.After(c.nextFind) {
		// A failing discovery keeps the previous list: the games already
		// known go on, and it is tried again next period.
		if err := c.discover(); err != nil {
			c.log.Warn("stream discovery failed; keeping the previous list", "err", err, "streams", len(c.order))
		}
		c.nextFind = now.Add(c.cfg.StreamsEvery)
	}
	if err := c.retryAcks(); err != nil {
		return err
	}
	if err := c.lease.held(); err != nil {
		// Not ours (yet): wait for the lease keeper rather than read work
		// that another live process with this name may be handling.
		c.sleep(c.cfg.LeaseTTL / 3)
		return nil
	}
	if err := c.openDoors(); err != nil {
		return err
	}
	if err := c.recoverAll(); err != nil {
		return err
	}
	if now := time.Now(); now.After(c.nextClaim) {
		if err := c.claimAll(); err != nil {
			return err
		}
		c.nextClaim = now.Add(c.cfg.ClaimEvery)
	}
	if now := time.Now(); now.After(c.nextCensus) {
		if err := c.census(); err != nil {
			return err
		}
		c.nextCensus = now.Add(c.cfg.CensusEvery)
	}
	return c.readNew()
}

// discover refreshes the stream list. New streams go through the group door
// and recover their own pending list; vanished ones are dropped.
func (c *Consumer) discover() error {
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	keys, err := c.cfg.Streams(ctx)
	if err != nil {
		c.fail("discover", err)
		return err
	}
	seen := make(map[string]bool, len(keys))
	order := make([]string, 0, len(keys))
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		order = append(order, k)
		if _, ok := c.streams[k]; !ok {
			c.streams[k] = &streamState{key: k, needDoor: true, recover: true,
				doorBackoff: backoff.Backoff{Min: time.Second, Max: time.Minute}}
			c.log.Info("stream discovered", "stream", k)
		}
	}
	for k := range c.streams {
		if !seen[k] {
			delete(c.streams, k)
			c.log.Info("stream no longer listed", "stream", k)
		}
	}
	c.order = order
	return nil
}

// active returns the streams whose group is open and whose own pending list
// was recovered: the ones read with ">" and claimed.
func (c *Consumer) active() []*streamState {
	out := make([]*streamState, 0, len(c.order))
	for _, k := range c.order {
		if st := c.streams[k]; st != nil && st.open && !st.recover {
			out = append(out, st)
		}
	}
	return out
}
