package feed

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// readArgs is the argument list of a non-blocking XREADGROUP over keys,
// built once and reused while the same keys are read: go-redis's
// XReadGroup builds it anew on every call, boxing each key and id, and at a
// low rate the linger's read over the hot streams (a hundred keys) made a
// tenth of the renderer's garbage (docs/benchmarks-journal.md, "Garbage and
// the tail"). It is immutable once built, so concurrent reads may share it.
type readArgs struct {
	keys []string
	args []any
}

// firstKeyPos is the index of the first key in readArgs.args: xreadgroup
// group G C count N streams KEY… (cluster routing hashes it).
const firstKeyPos = 7

// argsCache holds the readArgs of the last few key lists read without
// blocking: the loop's linger read and the read-ahead's.
type argsCache struct {
	last [2]atomic.Pointer[readArgs]
	next atomic.Uint32
}

// xreadNoBlock returns the command reading ">" from keys without blocking,
// as XReadGroup with Block -1 would build it.
func (c *Consumer) xreadNoBlock(ctx context.Context, keys []string) *redis.XStreamSliceCmd {
	ra := c.argsFor(keys)
	cmd := redis.NewXStreamSliceCmd(ctx, ra.args...)
	cmd.SetFirstKeyPos(firstKeyPos)
	return cmd
}

func (c *Consumer) argsFor(keys []string) *readArgs {
	for i := range c.args.last {
		if ra := c.args.last[i].Load(); ra != nil && slices.Equal(ra.keys, keys) {
			return ra
		}
	}
	args := make([]any, 0, firstKeyPos+2*len(keys))
	args = append(args, "xreadgroup", "group", c.cfg.Group, c.cfg.Consumer, "count", c.cfg.Count, "streams")
	for _, k := range keys {
		args = append(args, k)
	}
	for range keys {
		args = append(args, ">")
	}
	ra := &readArgs{keys: slices.Clone(keys), args: args}
	c.args.last[c.args.next.Add(1)%uint32(len(c.args.last))].Store(ra)
	return ra
}

// streamsArgs is the STREAMS part of an XREADGROUP: keys, then one id each.
func streamsArgs(sts []*streamState, id func(*streamState) string) []string {
	args := make([]string, 0, 2*len(sts))
	for _, st := range sts {
		args = append(args, st.key)
	}
	for _, st := range sts {
		args = append(args, id(st))
	}
	return args
}
