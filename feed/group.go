package feed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/untrusted"
)

// reopen sends a stream back through the group door after a server error
// (NOGROUP after a flush or a restart without persistence, WRONGTYPE after
// the key was replaced): the door tells which, and the other streams go on.
func (c *Consumer) reopen(st *streamState, err error) {
	if !st.needDoor {
		c.log.Debug("stream sent back to the group door", "stream", st.key, "err", err)
	}
	st.open, st.needDoor = false, true
	c.track(st)
}

// openDoors runs XGROUP CREATE key group 0 MKSTREAM, pipelined, for every
// stream that needs it and whose retry time has come. Only BUSYGROUP is
// swallowed; any other reply error is loud (error log, metric, and Inspect
// shows it) and retried later with backoff; the other streams go on.
func (c *Consumer) openDoors() error {
	now := time.Now()
	todo := c.pick(func(st *streamState) bool { return st.needDoor && !now.Before(st.nextDoor) })
	for chunk := range slices.Chunk(todo, 1000) {
		if err := c.openDoorsOf(chunk, now); err != nil || c.stopping() {
			return err
		}
	}
	return nil
}

func (c *Consumer) openDoorsOf(todo []*streamState, now time.Time) error {
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	p := c.pipes()
	cmds := make([]*redis.StatusCmd, len(todo))
	for i, st := range todo {
		if st.seenOpen && !st.pinned {
			// A registry game whose group went away: its stream may have
			// been deleted (feedctl prune -streams, a flush). MKSTREAM
			// would bring it back, empty, for good.
			cmds[i] = p.of(st.key).XGroupCreate(ctx, st.key, c.cfg.Group, "0")
		} else {
			cmds[i] = p.of(st.key).XGroupCreateMkStream(ctx, st.key, c.cfg.Group, "0")
		}
	}
	p.exec(ctx)
	errs := make([]error, len(todo))
	for i := range todo {
		errs[i] = cmds[i].Err()
	}
	c.groupsThere(ctx, todo, errs)
	var recreated, created, vanished, refused []string
	var refusedErr error
	var refusedIn time.Duration
	answered := false
	for i, st := range todo {
		err := errs[i]
		if err == nil || err == errGroupThere || serverError(err) {
			answered = true
		}
		switch {
		case isNoStream(err):
			// The stream is gone: forget it, as the sweep forgets a game
			// that left the registry. A writer's next entry raises its
			// score, and the beat finds it again; until then the beat and
			// the sweep pass over its unchanged score (forgetDeleted).
			c.forgetDeleted(st)
			vanished = append(vanished, st.key)
		case err == nil || err == errGroupThere || strings.HasPrefix(err.Error(), "BUSYGROUP"):
			if err == nil {
				if st.seenOpen {
					c.stats.groupsCreated.add(causeRecreated, 1)
					recreated = append(recreated, st.key)
				} else {
					c.stats.groupsCreated.add(causeNew, 1)
					created = append(created, st.key)
				}
				// A new group has an empty pending list, but recovering
				// it is cheap and keeps one rule: recover after every door.
				st.recover = true
				// A group made here has delivered nothing yet, so the
				// store cannot be behind it: no catch-up (a new host
				// meeting thousands of games pays no round trip per game).
				// A catch-up under way goes on: it reads the stream, not
				// the group, and the store still lacks the rest of it.
				if st.catchLast == "" {
					st.caught = true
				}
			}
			// Pending and lag tell whether to recover and what to read.
			st.inspect = true
			if st.doorErr != nil {
				c.log.Info("stream usable again", "stream", st.key, "game", gameOf(st.key))
			}
			st.open, st.needDoor, st.seenOpen, st.doorErr = true, false, true, nil
			st.doorBackoff.Reset()
			st.downBackoff.Reset()
		case serverError(err) || aclRefused(err):
			st.open, st.doorErr = false, err
			d := st.doorBackoff.Next()
			st.nextDoor = now.Add(d)
			c.stats.groupErrors.add(errCode(err), 1)
			if aclRefused(err) {
				// Every stream alike: one line a pass, said below.
				refused = append(refused, st.key)
				refusedErr, refusedIn = err, d
				continue
			}
			c.log.Error("consumer group cannot be created; stream skipped", "stream", st.key,
				"game", gameOf(st.key), "err", err, "retry_in", d.Round(time.Millisecond))
		default:
			// Its node unreachable (down, failing over): this stream waits
			// for its own retry, the others go on. Given up for the turn,
			// as it once was, the door came first in every turn, and one
			// master down held every game of the cluster until it was back
			// (TestClusterDeadMasterLeavesOthersRead).
			if c.stopping() {
				return err // Close cancelled the call; not a failure
			}
			c.fail("group", err)
			_ = c.setAside([]*streamState{st}, err)
		}
	}
	if answered {
		c.ok()
	}
	if len(refused) > 0 {
		// Redis answered, with a refusal: not counted as an answer, so
		// Ready names it when nothing else answers, as for the reads.
		c.fail("group", refusedErr)
		c.log.Error(aclDoorRefused, "count", len(refused), "streams", headOf(refused, 5), "grant", grantOf(refusedErr),
			untrusted.Err(refusedErr), "retry_in", refusedIn.Round(time.Millisecond))
	}
	if len(vanished) > 0 {
		c.log.Info("streams deleted; forgotten until written again", "count", len(vanished), "streams", headOf(vanished, 5))
		c.note(fmt.Sprintf("streams of %d games deleted under the consumer (feedctl prune -streams, or Redis lost its data: flush, or restart without persistence); forgotten until written again; the store keeps every line", len(vanished)))
	}
	if len(created) > 0 {
		c.log.Info("consumer groups created", "count", len(created), "streams", headOf(created, 5))
	}
	if len(recreated) > 0 {
		// One line per pass, however many games lost their group at once.
		c.log.Warn("consumer groups re-created after NOGROUP (Redis flushed or restarted without persistence, or the group deleted by hand)",
			"count", len(recreated), "streams", headOf(recreated, 5))
		c.note(fmt.Sprintf("consumer groups of %d streams re-created after NOGROUP: Redis lost its data (flush, or restart without persistence), or the group was deleted (XGROUP DESTROY); its entries are read again from the start, and the store keeps every line once", len(recreated)))
	}
	return nil
}

// aclDoorRefused is the line of a group door refused by the server's ACL
// (aclRefused): the user lacks +xgroup|create, or the stream's key. The
// streams wait for the door's backoff (1 s doubling to 1 min) and are
// read once it is granted, without a restart. Until 7 Dec 2026 the
// refusal took the path of a node that did not answer: the streams were
// set aside, said "not reachable", or, nothing else answering, the loop
// backed off with the bare reply (TestACLRefusedDoorSaidAndRetried).
const aclDoorRefused = "the server's ACL refuses XGROUP CREATE; the streams wait for the group door's retry: grant it (docs/operations.md, \"A Redis with ACL users\")"

// errGroupThere stands for BUSYGROUP where XGROUP CREATE was refused but
// the group exists (groupsThere).
var errGroupThere = errors.New("BUSYGROUP consumer group exists")

// groupsThere looks up, with XINFO GROUPS, the groups whose XGROUP CREATE
// was refused with OOM (Redis at maxmemory under noeviction), and turns
// the refusal of one that exists into the BUSYGROUP it would have had.
// XGROUP CREATE is refused there before it looks at the group, while the
// reads and acks of an existing group are not: taken for a door error, a
// renderer started during the incident read none of its games, each held
// back by the door's backoff, up to a minute, once memory was freed
// (TestOutOfMemoryAtStartReadsBacklog). A group that does not exist is
// still refused: creating it needs memory.
func (c *Consumer) groupsThere(ctx context.Context, todo []*streamState, errs []error) {
	var idx []int
	for i, err := range errs {
		if errCode(err) == "OOM" {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	p := c.pipes()
	infos := make([]*redis.XInfoGroupsCmd, len(idx))
	for j, i := range idx {
		infos[j] = p.of(todo[i].key).XInfoGroups(ctx, todo[i].key)
	}
	p.exec(ctx)
	for j, i := range idx {
		groups, err := infos[j].Result()
		if err != nil {
			continue // the OOM stands
		}
		for _, g := range groups {
			if g.Name == c.cfg.Group {
				errs[i] = errGroupThere
				break
			}
		}
	}
}

func headOf(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}

// isNil reports a reply of nil (a timed out blocking read).
func isNil(err error) bool { return errors.Is(err, redis.Nil) }
