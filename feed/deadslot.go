package feed

import (
	"context"
	"fmt"

	"github.com/codemojex/feed/internal/event"
)

// deadSlotProbe is the stream key Open checks DeadKey with when the
// consumer follows a registry: its streams are event.StreamKey's, tagged.
const deadSlotProbe = "probe"

// checkDeadSlot reports, on a cluster, a stream whose dead-letter stream
// or dead positions set is in another hash slot. A dead letter is one
// script over the three keys, which a cluster refuses (CROSSSLOT) when
// they do not share a slot: the consumer read such a stream, and failed
// at its first poison entry, every claim after, for good. The default
// DeadKey (event.DeadKeyOf) of a key without a hash tag is key+":dead", in
// another slot (and its set, key+":dead:pos", in a third); it stays so
// (changing it would rename existing users' keys), and a stream key with
// a hash tag ({game}) keeps all three together. On a single node every
// key is served, and nothing is checked.
func (c *Consumer) checkDeadSlot(stream string) error {
	if !isCluster(c.rdb) {
		return nil
	}
	dk := c.cfg.DeadKey(stream)
	s, d, p := event.Slot(stream), event.Slot(dk), event.Slot(deadPositionsKey(dk))
	if s == d && s == p {
		return nil
	}
	return fmt.Errorf("%w: on a cluster a stream and its dead keys must share a hash slot: stream %q is in slot %d, its dead-letter stream %q in %d and dead positions set %q in %d (give the stream key a hash tag, as codemojex:{GAME}:events, or set DeadKey)",
		ErrConfig, stream, s, dk, d, deadPositionsKey(dk), p)
}

// checkDeadSlots runs checkDeadSlot at Open over the static streams as
// Config.Streams lists them now (a failing list is left to the loop, which
// lists again), or over a registry's probe stream.
func (c *Consumer) checkDeadSlots(ctx context.Context) error {
	if !isCluster(c.rdb) {
		return nil
	}
	if c.cfg.Streams == nil {
		return c.checkDeadSlot(event.StreamKey(deadSlotProbe))
	}
	keys, err := c.cfg.Streams(ctx)
	if err != nil {
		return nil
	}
	for _, k := range keys {
		if err := c.checkDeadSlot(k); err != nil {
			return err
		}
	}
	return nil
}
