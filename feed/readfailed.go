package feed

import (
	"strings"

	"github.com/codemojex/feed/internal/untrusted"
)

// noGroupStream returns the stream of sts that a NOGROUP reply names
// ("NOGROUP No such key 'K' or consumer group 'G' in XREADGROUP …", as
// Redis 7 and Valkey 8 answer a read, which stops at the first stream at
// fault), or nil when it names none of them: Redis 7 answers a read
// blocked on a group destroyed under it "NOGROUP the consumer group this
// client was blocked on no longer exists", and then every stream of the
// read is suspect.
func noGroupStream(sts []*streamState, err error) *streamState {
	msg := err.Error()
	for _, st := range sts {
		if strings.Contains(msg, "'"+st.key+"'") {
			return st
		}
	}
	return nil
}

// readFailed handles the error of a read over sts. A server error (NOGROUP,
// WRONGTYPE) sends them back through the door, which singles out the bad
// one; a first NOGROUP (a stream deleted under the read) is not the turn's
// error, so the others are read at the next turn without a backoff. A
// multi-key read's TRYAGAIN (a slot's keys split by a migration) reads the
// slot's streams one a command from the next turn on (splitSlot).
// CROSSSLOT turns on per-slot reads and is retried after the turn's
// backoff. A connection error, a cluster redirection or UNBLOCKED (not of
// the blocking read: see readHot) sets the streams aside for a retry of
// their own (setAside), and the turn goes on: the group and its pending
// list survive a slot move or a failover.
func (c *Consumer) readFailed(op string, sts []*streamState, err error) error {
	c.fail(op, err)
	if errCode(err) == "CROSSSLOT" {
		c.clusterRefresh(err)
		return quiet{err}
	}
	if errCode(err) == "TRYAGAIN" && len(sts) > 1 && c.perSlot && !c.stopping() {
		c.splitSlot(op, sts, err)
		return nil
	}
	if !serverError(err) {
		return c.setAside(sts, err)
	}
	noGroup := isNoGroup(err)
	var named *streamState // the stream the NOGROUP names, if any
	if noGroup {
		named = noGroupStream(sts, err)
	}
	again := false // the stream at fault met NOGROUP before, not read since
	for _, st := range sts {
		if noGroup && (named == nil || st == named) {
			again = again || st.noGroup
			st.noGroup = true
		}
		c.reopen(st, err)
	}
	if noGroup {
		// A stream deleted (feedctl prune -streams, a DEL) or a group
		// lost (a flush): the door re-creates the group, or forgets a
		// deleted registry game, and says so in one line; the other
		// streams of the read go through it too (BUSYGROUP, then XINFO
		// GROUPS) and are read at the next turn. Not a turn's error:
		// until 6 Dec 2026 it was, and a deleted stream's NOGROUP in a
		// multi-key read cost every other game of that read the loop's
		// backoff, 28-49 ms (TestUnblockedOthersReadOn). The backoff
		// still guards against a NOGROUP that the door cannot cure: one
		// met again by a stream that was not read since. Judged by the
		// stream the NOGROUP names: until 6 Dec 2026 every stream of the
		// read counted, and the others, marked by the first deletion
		// until their next read returned, made a second deletion met
		// before then (feedctl prune -streams, one game after another)
		// back the loop off (TestNoGroupJudgedPerStream). The door does
		// not clear the mark (until 6 Dec 2026 a group it created did):
		// a group re-made that meets NOGROUP again before any read of
		// its stream is one the door cannot cure, and without the
		// backoff the door and the read would take turns at full speed.
		if again {
			return quiet{err}
		}
		c.log.Debug(op+" refused with NOGROUP; its streams go through the group door at the next turn",
			"count", len(sts), untrusted.Err(err))
		return nil
	}
	if op == "recover" {
		return nil
	}
	return err
}
