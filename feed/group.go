package feed

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/backoff"
	"github.com/codemojex/feed/internal/event"
)

// streamState is the loop's view of one stream.
type streamState struct {
	key         string
	open        bool // the group is known to exist: read and claim it
	needDoor    bool // run XGROUP CREATE before using the stream
	recover     bool // read the own pending list from 0 before ">"
	seenOpen    bool // the group existed once: a creation is a re-creation
	doorErr     error
	doorBackoff backoff.Backoff
	nextDoor    time.Time
}

func gameOf(stream string) string {
	g, _ := event.GameOfKey(stream)
	return g
}

// reopen sends a stream back through the group door after a server error
// (NOGROUP after a flush or a restart without persistence, WRONGTYPE after
// the key was replaced): the door tells which, and the other streams go on.
func (c *Consumer) reopen(st *streamState, err error) {
	if !st.needDoor {
		c.log.Debug("stream sent back to the group door", "stream", st.key, "err", err)
	}
	st.open, st.needDoor = false, true
}

// openDoors runs XGROUP CREATE key group 0 MKSTREAM, pipelined, for every
// stream that needs it and whose retry time has come. Only BUSYGROUP is
// swallowed; any other reply error is loud (error log, metric, and Inspect
// shows it) and retried later with backoff; the other streams go on.
func (c *Consumer) openDoors() error {
	now := time.Now()
	var todo []*streamState
	for _, k := range c.order {
		if st := c.streams[k]; st.needDoor && !now.Before(st.nextDoor) {
			todo = append(todo, st)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.StatusCmd, len(todo))
	for i, st := range todo {
		cmds[i] = pipe.XGroupCreateMkStream(ctx, st.key, c.cfg.Group, "0")
	}
	_, _ = pipe.Exec(ctx)
	var recreated []string
	for i, st := range todo {
		err := cmds[i].Err()
		switch {
		case err == nil || strings.HasPrefix(err.Error(), "BUSYGROUP"):
			if err == nil {
				c.stats.groupsCreated.Add(1)
				if st.seenOpen {
					c.stats.groupsRecreated.Add(1)
					mGroupsCreated.WithLabelValues("recreated").Inc()
					recreated = append(recreated, st.key)
				} else {
					mGroupsCreated.WithLabelValues("new").Inc()
					c.log.Info("consumer group created", "stream", st.key, "game", gameOf(st.key))
				}
				// A new group has an empty pending list, but recovering
				// it is cheap and keeps one rule: recover after every door.
				st.recover = true
			}
			if st.doorErr != nil {
				c.log.Info("stream usable again", "stream", st.key, "game", gameOf(st.key))
			}
			st.open, st.needDoor, st.seenOpen, st.doorErr = true, false, true, nil
			st.doorBackoff.Reset()
		case serverError(err):
			st.open, st.doorErr = false, err
			d := st.doorBackoff.Next()
			st.nextDoor = now.Add(d)
			c.stats.groupErrors.Add(1)
			mGroupErrors.WithLabelValues(errCode(err)).Inc()
			c.log.Error("consumer group cannot be created; stream skipped", "stream", st.key,
				"game", gameOf(st.key), "err", err, "retry_in", d.Round(time.Millisecond))
		default:
			c.fail("group", err)
			return err
		}
	}
	c.ok()
	if len(recreated) > 0 {
		// One line per pass, however many games lost their group at once.
		c.log.Warn("consumer groups re-created after NOGROUP (Redis flushed or restarted without persistence)",
			"count", len(recreated), "streams", headOf(recreated, 5))
	}
	return nil
}

func headOf(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}

// isNil reports a reply of nil (a timed out blocking read).
func isNil(err error) bool { return errors.Is(err, redis.Nil) }
