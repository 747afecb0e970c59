package feed

// Streams set aside (docs/reader-law.md, "A node that does not answer"):
// a node that does not answer costs its own streams a wait, not every game
// its turn.

import (
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/backoff"
	"github.com/codemojex/feed/internal/untrusted"
)

// downRetryMax caps the wait of a stream set aside before the steps try
// its node again: a master that comes back (or whose replica takes over)
// is read again within it.
const downRetryMax = 5 * time.Second

// setAside sets aside sts, whose node did not answer err (a connection
// error or timeout, or LOADING, MASTERDOWN, CLUSTERDOWN, TRYAGAIN,
// UNBLOCKED: the node cannot serve now; for those the slot map is reloaded
// once a turn), or whose command the server's ACL refused: each waits for
// its own retry (downBackoff, capped at downRetryMax) and every step
// passes it over until then, so the turn goes
// on with the other streams. Until 4 Dec 2026 any such error ended the
// turn, and one master down (killed, not yet replaced by its replica)
// stopped the reading of every game of the cluster
// (TestClusterDeadMasterHotGame). It returns err when err is not such an
// error (a reply about the stream itself, CROSSSLOT, or Close cancelled the
// call), for the caller to handle as before, and nil when the streams were
// set aside.
func (c *Consumer) setAside(sts []*streamState, err error) error {
	return c.setAsideAt(sts, err, time.Now())
}

// setAsideAt is setAside at now.
func (c *Consumer) setAsideAt(sts []*streamState, err error, now time.Time) error {
	if err == nil || isNil(err) || serverError(err) || errCode(err) == "CROSSSLOT" || c.stopping() {
		return err
	}
	if clusterRetry(err) && !c.asideSlots {
		c.asideSlots = true
		c.clusterRefresh(err)
	}
	for _, st := range sts {
		if !st.down(now) {
			st.downUntil = now.Add(st.downBackoff.Next())
			c.aside = append(c.aside, st)
		}
	}
	c.asideErr = err
	if cc, ok := c.rdb.(*redis.ClusterClient); ok && !clusterRetry(err) && !aclRefused(err) {
		// The node itself did not answer: every stream of it waits with
		// these, or the next one met (a cold game, a census or poll page)
		// costs its turn go-redis's dial retries again. An ACL's refusal
		// is the node's answer about these streams' command alone: until
		// 7 Dec 2026 it held every game of the master too, until its PING
		// answered, at each refusal (TestClusterACLRefusalHoldsItsStreamOnly).
		byNode := map[string][]*streamState{}
		var order []string
		for _, st := range sts {
			if m, merr := cc.MasterForKey(c.ctx, st.key); merr == nil {
				addr := m.Options().Addr
				if byNode[addr] == nil {
					order = append(order, addr)
				}
				byNode[addr] = append(byNode[addr], st)
			}
		}
		for _, addr := range order {
			c.setAsideNode(addr, now, byNode[addr]...)
		}
	}
	return nil
}

// probeTimeout bounds probe's PING of one node.
const probeTimeout = 500 * time.Millisecond

// asideWait caps the loop's wait for new entries (blockFor) while streams
// or nodes are set aside, so that the answer of their PING, sent off the
// loop (ping), is taken by a turn within pingFresh of its coming. A static
// list's turns otherwise waited a whole Block (1 s by default) when the
// streams left to read were quiet, the answer was too old whenever a turn
// took it, and the PING was sent again, turn after turn: with a Block of
// 2 s a game whose master came back was never read again, with 1 s now
// and then (TestClusterStaticListBackAfterAside).
const asideWait = pingFresh / 4

// probe PINGs, once per node and for at most probeTimeout, the nodes of
// the streams set aside whose retry has come: the streams of a node that
// answers go back to the steps, the others are set aside again. A cluster
// node's PING goes off the loop goroutine (ping), and its streams wait
// for the answer, taken at a later turn. Were the
// steps' own calls the retry, each would cost seconds while the node is
// dead (go-redis dials it again and again, then retries the call), and
// every other game would wait for them in the same turn.
func (c *Consumer) probe() {
	now := time.Now()
	var due []*streamState
	c.asideHeld = len(c.downNodes) > 0
	for _, st := range c.work.all() {
		if st.downUntil.IsZero() {
			continue
		}
		c.asideHeld = true
		if !st.down(now) {
			due = append(due, st)
		}
	}
	answers := c.probeNodes(now) // by node address
	for _, st := range due {
		var node redis.Cmdable = c.rdb
		addr := ""
		if cc, ok := c.rdb.(*redis.ClusterClient); ok {
			m, err := cc.MasterForKey(c.ctx, st.key)
			if err != nil {
				_ = c.setAside([]*streamState{st}, err)
				continue
			}
			node, addr = m, m.Options().Addr
		}
		err, seen := answers[addr]
		if !seen {
			if addr != "" {
				err = c.ping(addr, node)
			} else {
				err = c.pingNow(node) // a single node: nothing else to read while it is away
			}
			answers[addr] = err
		}
		if err == errPingSent {
			st.downUntil = now.Add(probeTimeout) // looked at again when it answered
			continue
		}
		if nodeAnswered(err) {
			st.downUntil = time.Time{}
			c.nodeBack(addr)
			continue
		}
		if !seen {
			c.fail("probe", err)
		}
		if c.setAside([]*streamState{st}, err) != nil {
			return // Close
		}
	}
	for addr, err := range answers {
		if addr != "" && err != errPingSent && !nodeAnswered(err) {
			c.setAsideNode(addr, now)
		}
	}
}

// nodeAnswered reports whether err, a node's answer to PING, says the
// node answered: no error, a reply of the server's, or the refusal of its
// ACL (a user without +ping: the node is there, and the steps' own
// commands may be granted). Until 7 Dec 2026 a refused PING counted as a
// node that did not answer: its streams were set aside again at every
// retry, a probe failure counted each time, the PING's NOPERM said as the
// streams', and while the rest of the turn answered (the registry's beat)
// they were never read again, their command granted or not
// (TestACLRefusedPingIsAnAnswer).
func nodeAnswered(err error) bool { return err == nil || serverError(err) || aclRefused(err) }

// registryDown holds the registry beat and the sweep back, on a cluster,
// after err, when the registry's node did not answer one of them: until the
// registry's retry (100 ms doubling to downRetryMax), whose PING
// (registryUp) must answer first. A hung registry master (SIGSTOPped,
// partitioned) held every turn for the beat's deadline, and every game's
// entries waited about 5 s (TestClusterHungRegistryMasterOthersReadOn).
// On a single node, a registry that does not answer is Redis not
// answering: the turn fails and the loop backs off.
func (c *Consumer) registryDown(err error, now time.Time) {
	if _, ok := c.rdb.(*redis.ClusterClient); !ok || serverError(err) || c.stopping() {
		return
	}
	if c.registryRetry.Max == 0 {
		c.registryRetry = backoff.Backoff{Min: 100 * time.Millisecond, Max: downRetryMax}
	}
	c.registryUntil = now.Add(c.registryRetry.Next())
}

// registryUp reports whether the beat and the sweep may ask the registry
// this turn: yes unless registryDown held them back, and then once its
// retry has come and the registry's node has answered a PING (probeTimeout,
// off the loop goroutine: see ping).
func (c *Consumer) registryUp(now time.Time) bool {
	if c.registryUntil.IsZero() {
		return true
	}
	if now.Before(c.registryUntil) {
		return false
	}
	var node redis.Cmdable = c.rdb
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		if m, err := cc.MasterForKey(c.ctx, c.cfg.Registry); err == nil {
			node = m
		}
	}
	err := c.ping("registry", node)
	if err == errPingSent {
		return false // asked again next turn
	}
	if !nodeAnswered(err) {
		if !c.stopping() {
			c.fail("probe", err)
		}
		c.registryUntil = now.Add(c.registryRetry.Next())
		return false
	}
	c.registryUntil = time.Time{}
	c.registryRetry.Reset()
	return true
}

// downNode is a cluster node whose PING failed: its retry's backoff, when
// that retry comes, and the hash slots it served then, with the key of a
// stream of one of them (the node's PING goes to the master of its slot).
type downNode struct {
	retry backoff.Backoff
	until time.Time
	slots map[int]bool
	key   string
	// held is the hold of the last walk over the known streams
	// (setAsideNode): until the retry moves it, the streams of the node met
	// since are held on their own, not by another walk.
	held  time.Time
	walks int // walks over the known streams, for TestClusterSetAsideManyStreamsOneWalk
}

// probeNodes PINGs the cluster nodes set aside whole whose retry has come,
// and returns their answers by address. A node that answers, or no longer
// serves the slot of its key (a replica took over), gives its streams back
// to the steps; the streams of one that does not stay aside until its next
// retry. Its streams are mostly out of the read set (cold games, which
// probe does not look at), and when they fell due with the node's retry
// rather than by its PING, the steps met them first (a poll page, a
// census) and paid go-redis's dial retries, seconds in which no other game
// was read, at every retry (TestClusterDeadMasterColdGamesCostNoStall).
func (c *Consumer) probeNodes(now time.Time) map[string]error {
	answers := map[string]error{}
	cc, ok := c.rdb.(*redis.ClusterClient)
	if !ok {
		return answers
	}
	for addr, d := range c.downNodes {
		if now.Before(d.until) {
			continue
		}
		if m, err := cc.MasterForKey(c.ctx, d.key); err == nil && m.Options().Addr == addr {
			err = c.ping(addr, m)
			answers[addr] = err
			if err == errPingSent {
				continue // its streams are held past the retry (setAsideNode)
			}
			if !nodeAnswered(err) {
				if c.stopping() {
					return answers
				}
				c.fail("probe", err)
				c.setAsideNode(addr, now)
				continue
			}
		}
		c.nodeBack(addr)
	}
	return answers
}

// nodeBack gives the streams of the cluster node addr, set aside whole,
// back to the steps.
func (c *Consumer) nodeBack(addr string) {
	d := c.downNodes[addr]
	if d == nil {
		return
	}
	delete(c.downNodes, addr)
	for _, st := range c.streams {
		if d.slots[st.slot] && !st.downUntil.IsZero() {
			st.downUntil = time.Time{}
		}
	}
}

// setAsideNode sets aside every known stream of the cluster node addr,
// whose PING just failed, until the node answers its own retry's PING
// (probeNodes); the retry doubles as the streams' does (to downRetryMax). Each stream drew a wait
// of its own, half of it random, so with many games on a dead master one
// of them fell due in nearly every turn, and every turn PINGed the node;
// and the streams not yet met (cold games, a census or poll page) were
// sent commands that cost the turn go-redis's dial retries, seconds each
// time (TestClusterDeadMasterProbedOncePerRetry).
//
// The retry doubles once per retry, not once per call: a step that fails
// for many streams of the node sets each aside on its own (a census
// pipeline, the probe of the streams due), and each call doubled it again,
// so with 30 games on the node its first failure put the next PING at the
// cap, 5 s (TestClusterDeadNodeRetryDoubles).
//
// The known streams are walked once per retry of the node: sts, streams of
// the node that failed since (met by a step, or found after the walk), are
// then held on their own. Until 6 Dec 2026 every call walked every known
// stream (with a MasterForKey per slot), and the steps call it once per
// failing stream (setAsideKey in checkAcks and checkDeads, the census, the
// group door): with 100,000 known games, 300 failing streams of a dead
// master cost 300 walks, 5.4 s of the loop goroutine in one turn
// (TestClusterSetAsideManyStreamsOneWalk).
func (c *Consumer) setAsideNode(addr string, now time.Time, sts ...*streamState) {
	cc, ok := c.rdb.(*redis.ClusterClient)
	if !ok {
		return
	}
	if c.downNodes == nil {
		c.downNodes = map[string]*downNode{}
	}
	d := c.downNodes[addr]
	if d == nil {
		d = &downNode{retry: backoff.Backoff{Min: 100 * time.Millisecond, Max: downRetryMax}}
		c.downNodes[addr] = d
	}
	if !now.Before(d.until) {
		d.until = now.Add(d.retry.Next())
	}
	// Its streams are held past the retry: they go back to the steps when
	// probeNodes has the node's answer, never before it.
	hold := d.until.Add(downRetryMax)
	if d.slots != nil && d.held.Equal(hold) {
		for _, st := range sts {
			d.slots[st.slot] = true
			if hold.After(st.downUntil) {
				st.downUntil = hold
			}
		}
		return
	}
	d.walks++
	bySlot := map[int]bool{} // whether addr serves the slot
	for _, st := range c.streams {
		on, seen := bySlot[st.slot]
		if !seen {
			m, err := cc.MasterForKey(c.ctx, st.key)
			on = err == nil && m.Options().Addr == addr
			bySlot[st.slot] = on
			if on && d.slots == nil {
				d.slots, d.key = map[int]bool{}, st.key
			}
			if on {
				d.slots[st.slot] = true
			}
		}
		if on && hold.After(st.downUntil) {
			st.downUntil = hold
		}
	}
	if d.slots == nil {
		delete(c.downNodes, addr) // no stream of it known: nothing to hold
		return
	}
	d.held = hold
}

// endTurn ends a turn whose steps returned err and which began when the
// loop's calls had been answered answers times. When streams were set
// aside and nothing else answered, Redis as a whole is away (a single node
// down, every master): the turn fails as it always did, so the loop backs
// off, Ready says why and every stream is tried again at the next turn
// (waits of their own would only delay them once Redis is back). Otherwise
// the streams set aside are logged, one line however many.
func (c *Consumer) endTurn(answers uint64, err error) error {
	aside, asideErr := c.aside, c.asideErr
	c.aside, c.asideErr, c.asideSlots = nil, nil, false
	if len(aside) == 0 || c.stopping() {
		return err
	}
	if c.answered() == answers {
		for _, st := range aside {
			st.downUntil = time.Time{}
		}
		if err != nil {
			return err
		}
		if clusterRetry(asideErr) {
			return quiet{asideErr}
		}
		return asideErr
	}
	keys := make([]string, len(aside))
	for i, st := range aside {
		keys[i] = st.key
	}
	if aclRefused(asideErr) {
		c.log.Warn(aclAsideRefused, "count", len(aside), "streams", headOf(keys, 5), "grant", grantOf(asideErr),
			untrusted.Err(asideErr))
		return err
	}
	level := slog.LevelWarn
	if clusterRetry(asideErr) {
		level = slog.LevelDebug // a slot moving or a failover: routine
	}
	c.log.Log(c.ctx, level, "streams not reachable; retried later, the others read on", "count", len(aside),
		"streams", headOf(keys, 5), untrusted.Err(asideErr))
	return err
}

// aclAsideRefused is endTurn's line for streams set aside because the
// server's ACL refused a command of theirs (the turn's last such error
// decides, as it decides the level of the other line): the node answered,
// and the fix is a grant, not the network. Until 7 Dec 2026 they were
// said "streams not reachable", the NOPERM only in the err
// (TestACLRefusedReadSaidRefused).
const aclAsideRefused = "streams refused by the server's ACL; retried later, the others read on: grant it (docs/operations.md, \"A Redis with ACL users\")"
