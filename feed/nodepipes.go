package feed

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
)

// nodeTimeout bounds, on a cluster, how long a step's commands that do not
// block (a pipeline's share of one node, an XAUTOCLAIM, the own pending
// list's XREADGROUP) wait for their node's reply, under the step's own
// deadline. A node answers those in milliseconds; one that has not after
// this long is taken for hung (SIGSTOPped, partitioned: its connections
// open, nothing answering) and set aside, and its retry is the probe's
// PING (probeTimeout). Without it a hung master held the turn, and with
// it the games of every other master, for the step's deadline and
// go-redis's retries: about 10 s for a read
// (TestClusterHungMasterOthersReadOn). It is as long as the margin the
// blocking read gives a reply past its BLOCK (one second) twice over, for
// a loaded host.
const nodeTimeout = 2 * time.Second

// callCtx is the context of one command of a step that does not block:
// parent's, within d, and on a cluster within nodeTimeout.
func (c *Consumer) callCtx(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := c.rdb.(*redis.ClusterClient); ok {
		d = min(d, nodeTimeout)
	}
	return context.WithTimeout(parent, d)
}

// nodePipes is a step's pipeline: one, or on a cluster one per master,
// sent concurrently, each with its own deadline (nodeTimeout). go-redis's
// cluster pipeline waits for every node's share, retries the share of a
// node that does not answer until its context ends, and then sets the
// context's error on every command that had none: the replies of the
// nodes that answered were lost with the hung one's, and a read's
// entries, delivered to this consumer by the server, waited pending for
// a claim, MinIdle later (TestClusterHungMasterOthersReadOn). It is used
// from one goroutine at a time; readKeys runs it off the loop goroutine.
type nodePipes struct {
	rdb   redis.UniversalClient
	ctx   context.Context      // of the slot look-ups (MasterForKey)
	cc    *redis.ClusterClient // nil on a single node
	one   redis.Pipeliner      // a single node's pipeline, made on first use
	bySlt map[int]redis.Pipeliner
	byAdr map[string]redis.Pipeliner
}

func (c *Consumer) pipes() *nodePipes { return newNodePipes(c.ctx, c.rdb) }

// newNodePipes returns an empty step's pipeline on rdb; ctx bounds its
// look-ups of slot owners, not its commands.
func newNodePipes(ctx context.Context, rdb redis.UniversalClient) *nodePipes {
	p := &nodePipes{rdb: rdb, ctx: ctx}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		p.cc, p.bySlt, p.byAdr = cc, map[int]redis.Pipeliner{}, map[string]redis.Pipeliner{}
	}
	return p
}

// of returns the pipeline of key's node.
func (p *nodePipes) of(key string) redis.Pipeliner {
	if p.cc == nil {
		if p.one == nil {
			p.one = p.rdb.Pipeline()
		}
		return p.one
	}
	slot := event.Slot(key)
	if pipe := p.bySlt[slot]; pipe != nil {
		return pipe
	}
	addr := "" // not known: a share of its own, routed by go-redis
	if m, err := p.cc.MasterForKey(p.ctx, key); err == nil {
		addr = m.Options().Addr
	}
	pipe := p.byAdr[addr]
	if pipe == nil {
		pipe = p.rdb.Pipeline()
		p.byAdr[addr] = pipe
	}
	p.bySlt[slot] = pipe
	return pipe
}

// exec sends every node's pipeline within ctx, concurrently on a cluster,
// and returns when each has its replies or its error.
func (p *nodePipes) exec(ctx context.Context) {
	if p.cc == nil {
		if p.one != nil {
			_, _ = p.one.Exec(ctx)
		}
		return
	}
	var wg sync.WaitGroup
	for _, pipe := range p.byAdr {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, nodeTimeout)
			defer cancel()
			_, _ = pipe.Exec(ctx)
		}()
	}
	wg.Wait()
}
