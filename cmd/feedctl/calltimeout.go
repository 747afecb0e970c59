package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/redisconn"
)

// DefaultTimeout is feedctl's -timeout: how long it waits for Redis to
// answer one call. go-redis alone retries a call that timed out three
// times, each after its 3 s read timeout and a backoff, so feedctl status
// against a hung (SIGSTOPped) Redis failed only after about 42 s.
const DefaultTimeout = 10 * time.Second

// TimeoutFloor is the shortest -timeout feedctl takes (0 aside): a bound
// under a dial and a round trip to a Redis across a network failed every
// call at once, "redis did not answer within -timeout 1ns".
const TimeoutFloor = 100 * time.Millisecond

// callTimeout is a go-redis hook that bounds each call to Redis (one
// command, or one pipeline or transaction), its retries and a cluster's
// redirections included, by its own deadline. A bound on each call, not
// on the whole command, holds for rebuild and prune too, whose work grows
// with the registry.
type callTimeout time.Duration

var _ redis.Hook = callTimeout(0)

func (h callTimeout) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Duration(h))
		defer cancel()
		return next(ctx, network, addr)
	}
}

func (h callTimeout) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		call, cancel := context.WithTimeout(ctx, time.Duration(h))
		defer cancel()
		err := next(call, cmd)
		if h.expired(ctx, call, err) {
			err = h.wrap(err)
			cmd.SetErr(err)
		}
		return err
	}
}

func (h callTimeout) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		call, cancel := context.WithTimeout(ctx, time.Duration(h))
		defer cancel()
		err := next(call, cmds)
		if h.expired(ctx, call, err) {
			err = h.wrap(err)
			for _, cmd := range cmds {
				// A command whose reply came (an error reply among them)
				// keeps it: only those cut by the deadline did not answer
				// (TestCallTimeoutPipelineReplyKept).
				if e := cmd.Err(); e != nil && !isReply(e) {
					cmd.SetErr(err)
				}
			}
		}
		return err
	}
}

// expired reports whether err is the call's own deadline, not the
// caller's (a Ctrl-C, say) or Redis's answer. A read cut at the deadline
// (i/o timeout) can return before the call's timer has ended its context:
// a deadline that has passed counts as expired. An error reply (redis.Nil,
// WRONGTYPE) is an answer however late it came: read just before the
// deadline and looked at just after, it was reported as "redis did not
// answer" (TestCallTimeoutReplyAtDeadline).
func (h callTimeout) expired(parent, call context.Context, err error) bool {
	if err == nil || parent.Err() != nil || isReply(err) {
		return false
	}
	return errors.Is(redisconn.Ended(call), context.DeadlineExceeded)
}

// wrap says which bound ran out: go-redis's own text for it is
// "i/o timeout" or "context deadline exceeded", which names neither
// Redis nor the flag that sets it.
func (h callTimeout) wrap(err error) error {
	return fmt.Errorf("redis did not answer within -timeout %v: %w", time.Duration(h), err)
}

// isReply reports whether err is Redis's answer (an error reply, redis.Nil),
// not a failure to get one.
func isReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}
