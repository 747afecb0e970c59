package feed

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// errPingSent stands for the answer of a node whose PING is on its way:
// its streams stay aside, without a failure counted, until it comes.
var errPingSent = errors.New("feed: ping in flight")

// pingFresh is how long a PING's answer may wait to be taken: one older
// says nothing of the node now (it answered, was given back, and hung
// again since).
const pingFresh = time.Second

// pings are the PINGs of cluster nodes sent off the loop goroutine, and
// their answers not yet taken, by node address. A hung node (SIGSTOPped,
// partitioned: connections open, nothing answers) took each retry's PING
// its whole probeTimeout on the loop goroutine, and every other game's
// entries waited 0.4–0.6 s at each retry for as long as it hung
// (TestClusterHungMasterOthersReadOn).
type pings struct {
	mu   sync.Mutex
	sent map[string]bool
	got  map[string]pingAnswer
}

type pingAnswer struct {
	err error
	at  time.Time
}

// ping returns the answer of node's PING (the node at addr), once it came.
// Until then it returns errPingSent, and sends the PING (probeTimeout) on a
// goroutine of the consumer's when none is on its way.
func (c *Consumer) ping(addr string, node redis.Cmdable) error {
	p := &c.pings
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.got[addr]; ok {
		delete(p.got, addr)
		if time.Since(a.at) < pingFresh {
			return a.err
		}
	}
	if p.sent[addr] {
		return errPingSent
	}
	if p.sent == nil {
		p.sent, p.got = map[string]bool{}, map[string]pingAnswer{}
	}
	p.sent[addr] = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		err := c.pingNow(node)
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.sent, addr)
		p.got[addr] = pingAnswer{err, time.Now()}
	}()
	return errPingSent
}

// pingNow PINGs node within probeTimeout, on the caller's goroutine.
func (c *Consumer) pingNow(node redis.Cmdable) error {
	ctx, cancel := context.WithTimeout(c.ctx, probeTimeout)
	defer cancel()
	return node.Ping(ctx).Err()
}
