package feed

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// aheadFor bounds how long readMany goes on reading ahead before it
// returns to the loop's other duties (beats, claims, the lease): a backlog
// is worked through in stretches of about this long, each ending with one
// batch that commits without a read overlapping it.
const aheadFor = 500 * time.Millisecond

// readAhead is a ">" read done off the loop goroutine, for streams whose
// last read came back full, while the batch before it commits: the replies,
// the entries decoded, and the handler's prepared commit of those it is to
// handle (Config.Prepare). It touches no consumer state: the loop goroutine
// takes it over (takeRead, processPrepared) once the batch before is
// settled, so that commits and acks stay in read order.
type readAhead struct {
	res    [][]redis.XStream // per group of keys
	errs   []error
	batch  []delivery                    // decoded (delivery.decoded)
	todo   []entryRef                    // the entries prepared, in order
	commit func(context.Context) []error // nil: nothing prepared
	at     time.Time                     // when the read was sent
}

// stale reports whether the entries of r may have been idle in this
// consumer's pending list, unhandled and not kept alive, for long enough
// that a peer's XAUTOCLAIM took some (MinIdle, by the server's clock): the
// batch before them committed that long. Their delivery counts and owner
// must then be read again. A quarter of MinIdle, by our clock, leaves the
// margin of the handler's keep-alive, whose first refresh comes MinIdle/2
// after the handler starts.
func (r *readAhead) stale(minIdle time.Duration) bool {
	return r != nil && time.Since(r.at) >= minIdle/4
}

// readKeys reads ">" without blocking from each group of keys, in one
// pipeline. It is safe to call off the loop goroutine.
func (c *Consumer) readKeys(keys [][]string) *readAhead {
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	p := c.pipes()
	cmds := make([]*redis.XStreamSliceCmd, len(keys))
	for i, ks := range keys {
		cmds[i] = c.xreadNoBlock(ctx, ks)
		_ = p.of(ks[0]).Process(ctx, cmds[i])
	}
	p.exec(ctx)
	r := &readAhead{res: make([][]redis.XStream, len(keys)), errs: make([]error, len(keys)), at: start}
	for i, cmd := range cmds {
		res, err := cmd.Result()
		if err != nil && !isNil(err) {
			r.errs[i] = err
			continue
		}
		r.res[i] = res
		r.batch = appendEntries(r.batch, keys[i], res)
	}
	return r
}

// readAhead reads keys (readKeys), decodes the entries and prepares those
// that process will hand to the handler: the ones that decode, delivered
// once. A panic in Prepare leaves the batch unprepared; the batch handler
// then takes it as usual.
func (c *Consumer) readAhead(keys [][]string) *readAhead {
	r := c.readKeys(keys)
	ms := make([]Message, 0, len(r.batch))
	r.todo = make([]entryRef, 0, len(r.batch))
	for i := range r.batch {
		d := &r.batch[i]
		d.msg, d.decErr = Decode(d.stream, d.x)
		d.msg.Attempts, d.msg.Group = d.attempts, c.cfg.Group
		d.decoded = true
		if d.decErr == nil && !c.overPoison(d.attempts) {
			ms = append(ms, d.msg)
			r.todo = append(r.todo, entryRef{d.stream, d.x.ID})
		}
	}
	if len(ms) > 0 {
		_ = safeCall(func() error {
			r.commit = c.cfg.Prepare(c.hctx, ms)
			return nil
		})
	}
	return r
}

// entryRef names an entry: its stream and its position there.
type entryRef struct{ stream, id string }

// commitFor returns the prepared commit if it covers exactly todo, in
// order; else nil (the batch handler takes todo).
func (r *readAhead) commitFor(todo []delivery) func(context.Context) []error {
	if r == nil || r.commit == nil || len(r.todo) != len(todo) {
		return nil
	}
	for i, d := range todo {
		if r.todo[i] != (entryRef{d.stream, d.x.ID}) {
			return nil
		}
	}
	return r.commit
}

// keysOf returns the stream keys of each group, for a read off the loop
// goroutine.
func keysOf(gs [][]*streamState) [][]string {
	keys := make([][]string, len(gs))
	for i, g := range gs {
		keys[i] = make([]string, len(g))
		for j, st := range g {
			keys[i][j] = st.key
		}
	}
	return keys
}

// dueOf returns the streams of sts still due and readable after a read:
// those whose read came back full, and not set aside by it.
func dueOf(sts []*streamState) []*streamState {
	var due []*streamState
	now := time.Now()
	for _, st := range sts {
		if st.due && st.readable() && !st.down(now) {
			due = append(due, st)
		}
	}
	return due
}
