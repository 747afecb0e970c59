package feed

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// KthLargest is kthLargest, for the external tests.
var KthLargest = kthLargest

// WorkSetOps runs ops on a new work set and returns what each "=" read:
// "+k" adds the state of key k (one per key, made on first use), "!k"
// adds a new state for k in place of the old one, "-k" removes k, and "="
// lists the members' keys in the set's order.
func WorkSetOps(ops []string) [][]string {
	w := newWorkSet()
	states := map[string]*streamState{}
	var out [][]string
	for _, op := range ops {
		k := op[1:]
		switch op[0] {
		case '+':
			if states[k] == nil {
				states[k] = &streamState{key: k}
			}
			w.add(states[k])
		case '!':
			states[k] = &streamState{key: k}
			w.add(states[k])
		case '-':
			w.remove(k)
		case '=':
			var keys []string
			for _, st := range w.all() {
				keys = append(keys, st.key)
			}
			out = append(out, keys)
		}
	}
	return out
}

// LiveKeys is liveKeys, for the external tests.
const LiveKeys = liveKeys

// ByRecency runs byRecency over streams whose hotUntil are untils (unix
// nanoseconds) and returns their indexes in its order, and how many lead.
func ByRecency(untils []int64, k int) ([]int, int) {
	sts := make([]*streamState, len(untils))
	index := map[*streamState]int{}
	for i, u := range untils {
		sts[i] = &streamState{hotUntil: time.Unix(0, u)}
		index[sts[i]] = i
	}
	out, n := byRecency(sts, k)
	order := make([]int, len(out))
	for i, st := range out {
		order[i] = index[st]
	}
	return order, n
}

// LoopErrorsOf returns how many loop operations op failed.
func LoopErrorsOf(c *Consumer, op string) int64 { return c.stats.loopErrors.get(op) }

// PollPages makes a consumer knowing n readable streams and returns the
// sizes of the pages its next polls read (pollNext), one per poll.
func PollPages(n, polls int) []int {
	c := &Consumer{streams: map[string]*streamState{}}
	for i := range n {
		st := newStream(fmt.Sprintf("codemojex:{g%06d}:events", i))
		st.open, st.caught, st.needDoor, st.recover = true, true, false, false
		c.streams[st.key] = st
	}
	var out []int
	for range polls {
		out = append(out, len(c.pollNext()))
	}
	return out
}

// AcquireLeaseOnly takes the lease on name in group as a renderer's Open
// does, and then neither refreshes nor releases it: the lease of a holder
// killed right after it took it.
func AcquireLeaseOnly(ctx context.Context, rdb redis.UniversalClient, group, name string, ttl time.Duration) error {
	return newLease(rdb, group, name, ttl).acquire(ctx)
}

// AcquireLeaseTwice takes the lease on name in group as a renderer's Open
// does, then sends the same take again, as go-redis's retry of a command
// whose reply timed out does, and returns the second take's error.
func AcquireLeaseTwice(ctx context.Context, rdb redis.UniversalClient, group, name string, ttl time.Duration) error {
	l := newLease(rdb, group, name, ttl)
	if err := l.acquire(ctx); err != nil {
		return err
	}
	return l.acquire(ctx)
}

// SetAsideMany makes a consumer on the cluster client cc knowing n streams
// (codemojex:{gNNNNNN}:events), then sets aside, one call each as
// checkAcks does (setAsideKey), all at one instant (within one retry of
// the node), the first k of them that live on the master of the first,
// with err (a connection error). It returns how long the k
// calls took (the first one, and the k-1 others), and how many known
// streams were then held (set aside), how many live on that master, and
// how many times the known streams were walked.
func SetAsideMany(cc *redis.ClusterClient, n, k int, err error) (first, rest time.Duration, held, onNode, walks int) {
	c := &Consumer{rdb: cc, ctx: context.Background(), streams: map[string]*streamState{}}
	keys := make([]string, n)
	for i := range n {
		st := newStream(fmt.Sprintf("codemojex:{g%06d}:events", i))
		keys[i] = st.key
		c.streams[st.key] = st
	}
	m, merr := cc.MasterForKey(c.ctx, keys[0])
	if merr != nil {
		panic(merr)
	}
	addr := m.Options().Addr
	var failing []string
	for _, key := range keys {
		if mk, e := cc.MasterForKey(c.ctx, key); e == nil && mk.Options().Addr == addr {
			onNode++
			if len(failing) < k {
				failing = append(failing, key)
			}
		}
	}
	// One now for every call, as within one turn: the node's retry (from
	// 100 ms) must not come between them, or a walk is due again. Under
	// load 300 calls outlasted it (TestClusterSetAsideManyStreamsOneWalk
	// failed in CI with 3 walks).
	start := time.Now()
	for i, key := range failing {
		if e := c.setAsideAt([]*streamState{c.streams[key]}, err, start); e != nil {
			panic(e)
		}
		if i == 0 {
			first = time.Since(start)
		}
	}
	rest = time.Since(start) - first
	now := time.Now()
	for _, st := range c.streams {
		if st.down(now) {
			held++
		}
	}
	if d := c.downNodes[addr]; d != nil {
		walks = d.walks
	}
	return first, rest, held, onNode, walks
}

// DeadOf returns how many letters c wrote under reason label.
func DeadOf(c *Consumer, label string) int64 { return c.stats.dead.get(label) }

// DeadPosMax is deadPosMax, the cap of a game's dead positions set.
const DeadPosMax = deadPosMax
