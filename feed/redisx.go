package feed

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/redisacl"
)

// serverError reports whether err is a reply from the server (WRONGTYPE,
// NOGROUP, ...) as opposed to a connection problem. Replies that mean "the
// server cannot answer now" count as connection problems; so do those of
// a master that refuses every write for now, NOREPLICAS (its
// min-replicas-to-write not met) and MISCONF (it cannot persist): XACK,
// XREADGROUP, XAUTOCLAIM and XGROUP CREATE are writes. Taken for a reply
// about the stream, a refused ack was dropped at its retry (the entry was
// claimed back and handled twice) and the stream was sent to the group
// door, which logged it as a group that cannot be created and held it back
// by its own backoff (TestWritesRefusedByMasterKeepAcks). So does the
// refusal of the server's ACL (aclRefused): a grant missing from the
// user, not a fault of the stream (TestACLRefusalIsNoStreamFault).
func serverError(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) || errors.Is(err, redis.Nil) || aclRefused(err) {
		return false
	}
	switch errCode(err) {
	case "LOADING", "BUSY", "MASTERDOWN", "READONLY", "NOREPLICAS", "MISCONF":
		return false
	}
	return !clusterRetry(err)
}

// clusterRetry reports a reply that means "the slot moved or its node is
// changing": MOVED and ASK (go-redis follows them itself, up to its
// MaxRedirects), TRYAGAIN and CLUSTERDOWN (during a resharding or a
// failover), UNBLOCKED (a blocked read whose slot migrated or whose master
// was failed over; go-redis does not retry it) and CROSSSLOT (a multi-key
// read over two slots). None of them means the group is lost: the loop
// reloads the slot map and retries after its backoff, like a connection
// error; a multi-key read's TRYAGAIN reads the slot's streams one a
// command instead (splitSlot), and the blocking read's UNBLOCKED reads
// them again at the next turn (readHot).
func clusterRetry(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	switch errCode(err) {
	case "MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN", "UNBLOCKED", "CROSSSLOT":
		return true
	}
	return false
}

// clusterRefresh reacts to a clusterRetry error: the slot map is reloaded
// (on a cluster client), and a CROSSSLOT from a client that did not look
// like a cluster turns on per-slot grouping of multi-key reads.
func (c *Consumer) clusterRefresh(err error) {
	if errCode(err) == "CROSSSLOT" && !c.perSlot {
		c.perSlot = true
		c.log.Warn("multi-key read refused with CROSSSLOT; grouping reads per hash slot from now on", "err", err)
	}
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		defer cancel()
		cc.ReloadState(ctx)
	}
}

// errCode returns the first word of a server error ("WRONGTYPE").
func errCode(err error) string {
	var re redis.Error
	if !errors.As(err, &re) {
		return "ERR"
	}
	code, _, _ := strings.Cut(re.Error(), " ")
	if code == "" || strings.ToUpper(code) != code {
		return "ERR"
	}
	return code
}

// aclRefused reports the server's ACL refusal of a command, a reply of
// the server's (redisacl.Refused: NOPERM, or a script's refused
// redis.call). The stream and its group are fine; the user lacks a grant
// (docs/operations.md, "A Redis with ACL users"). Until 7 Dec 2026 it
// was a reply about the stream: a refused XAUTOCLAIM or XREADGROUP sent
// the stream to the group door at every turn, and a refused XACK was
// dropped as "nothing left to ack", so its entries were claimed back and
// handled again once XACK was granted.
func aclRefused(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && redisacl.Refused(re)
}

// grantOf returns the rule err, a refusal of the server's ACL, asks for
// ("+xgroup|create"), or "see ACL LOG" when the reply names none.
func grantOf(err error) string {
	if g := redisacl.Grant(err); g != "" {
		return g
	}
	return "see ACL LOG"
}

func isNoGroup(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOGROUP")
}

// isNoStream reports XGROUP CREATE's refusal, without MKSTREAM, of a key
// that does not exist ("ERR The XGROUP subcommand requires the key to
// exist", the same in Redis 7 and Valkey).
func isNoStream(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(re.Error(), "requires the key to exist")
}
