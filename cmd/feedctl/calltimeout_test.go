package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/testkit/redistest"
)

// lateReply is a go-redis hook that hands the reply of a GET or an LLEN on
// only once the call's context has ended: a reply that lands at the call's
// deadline, as one read just before it does when the check comes a moment
// after. It waits on the context, not on a clock. The connection's own
// first commands (HELLO, CLIENT SETINFO) pass through hooks too, under the
// same context, and are left alone.
type lateReply struct{}

func (lateReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (lateReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "get" || cmd.Name() == "llen" {
			<-ctx.Done()
		}
		return err
	}
}

func (lateReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestCallTimeoutReplyAtDeadline: a reply that lands at its call's
// deadline is Redis's answer, not a timeout. One without an error never
// was one (expired looks at errors only); an error reply (redis.Nil for a
// missing key, WRONGTYPE) was taken for the deadline's and reported as
// "redis did not answer within -timeout …", the reply's error wrapped.
func TestCallTimeoutReplyAtDeadline(t *testing.T) {
	s := redistest.MustStart(t)
	ctx := context.Background()
	setup := s.Client(t)
	if err := setup.Set(ctx, "str", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	// callTimeout first: go-redis calls the first hook added outermost,
	// so lateReply sees the call's context.
	rdb.AddHook(callTimeout(TimeoutFloor))
	rdb.AddHook(lateReply{})
	for _, tt := range []struct {
		name string
		cmd  func() redis.Cmder
		want error // nil: no error
		text string
	}{
		{"answer", func() redis.Cmder { return rdb.Get(ctx, "str") }, nil, ""},
		{"nil reply", func() redis.Cmder { return rdb.Get(ctx, "missing") }, redis.Nil, "redis: nil"},
		{"error reply", func() redis.Cmder { return rdb.LLen(ctx, "str") }, nil, "WRONGTYPE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cmd().Err()
			switch {
			case tt.text == "" && err != nil:
				t.Errorf("reply at the deadline: %v, want none", err)
			case tt.text != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.text)):
				t.Errorf("reply at the deadline: %v, want Redis's own %q", err, tt.text)
			case tt.want != nil && err != tt.want:
				// Its callers may compare it, as go-redis's doc shows.
				t.Errorf("reply at the deadline: %v, want %v itself", err, tt.want)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("reply at the deadline taken for it: %v", err)
			}
		})
	}
}

// TestCallTimeoutPipelineReplyKept: in a pipeline cut by its -timeout, a
// command whose reply came before the deadline keeps it, an error reply
// too; only those left without one are "redis did not answer". Every
// command with an error was relabelled, WRONGTYPE included.
func TestCallTimeoutPipelineReplyKept(t *testing.T) {
	s := redistest.MustStart(t)
	ctx := context.Background()
	setup := s.Client(t)
	if err := setup.Set(ctx, "str", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(callTimeout(TimeoutFloor))
	p := rdb.Pipeline()
	llen := p.LLen(ctx, "str")
	blocked := p.BLPop(ctx, 0, "empty") // never answers: the deadline cuts it
	if _, err := p.Exec(ctx); err == nil {
		t.Fatal("the pipeline answered; want its blocked command cut by -timeout")
	}
	if err := llen.Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Errorf("LLEN, answered before the deadline: %v, want Redis's WRONGTYPE", err)
	}
	if err := blocked.Err(); err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("BLPOP, cut by the deadline: %v, want \"redis did not answer within -timeout\"", err)
	}
}
