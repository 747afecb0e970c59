package feed_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

func TestDeadLetterTools(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("tools"), event.DeadKey("tools")
	var broken atomic.Bool
	broken.Store(true)
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if broken.Load() {
			return feed.Poison(errors.New("renderer bug"))
		}
		return rec.handler(ctx, m)
	}
	c := mustOpen(t, cfg)
	first := add(t, rdb, s, "player", "<b>zoe</b>")
	second := add(t, rdb, s)
	waitFor(t, 5*time.Second, "two dead letters", func() bool { return c.Stats().Dead == 2 })

	dead, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil || len(dead) != 2 {
		t.Fatalf("ListDead = %v, %v", dead, err)
	}
	d := dead[0]
	if d.EvtID != first || d.Reason != "poison: renderer bug" || d.Attempts != 1 || d.Consumer != "r1" || d.StreamID == "" || time.Since(d.At) > time.Minute {
		t.Errorf("dead letter %+v", d)
	}
	if d.Fields["player"] != "<b>zoe</b>" || d.Fields["kind"] != "chat" || d.Fields["id"] != first || len(d.Fields) != 5 {
		t.Errorf("original fields %v", d.Fields)
	}
	if one, _ := feed.ListDead(ctx, rdb, dk, 1); len(one) != 1 || one[0].EvtID != first {
		t.Errorf("ListDead n=1: %v", one)
	}

	// The bug is fixed: requeue the first, drop the second.
	broken.Store(false)
	pos, err := feed.RequeueDead(ctx, rdb, s, dk, d.DeadID)
	if err != nil || pos == "" {
		t.Fatalf("RequeueDead = %q, %v", pos, err)
	}
	waitFor(t, 5*time.Second, "requeued entry handled", func() bool { return rec.count(first) == 1 })
	m := rec.all()[0]
	if m.Position != pos || m.Payload["player"] != "<b>zoe</b>" {
		t.Errorf("requeued message %+v", m)
	}
	for k := range m.Payload {
		if strings.HasPrefix(k, "dead_") {
			t.Errorf("requeued entry carries %s", k)
		}
	}
	if err := feed.DropDead(ctx, rdb, dk, dead[1].DeadID); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.XLen(ctx, dk).Result(); n != 0 {
		t.Errorf("dead stream has %d entries", n)
	}
	if err := feed.DropDead(ctx, rdb, dk, dead[1].DeadID); !errors.Is(err, feed.ErrDeadNotFound) {
		t.Errorf("DropDead twice = %v", err)
	}
	if _, err := feed.RequeueDead(ctx, rdb, s, dk, dead[0].DeadID); !errors.Is(err, feed.ErrDeadNotFound) {
		t.Errorf("RequeueDead twice = %v", err)
	}
	if rec.count(second) != 0 {
		t.Error("dropped entry was handled")
	}
}

func TestInspect(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, other := stream("ins"), stream("nogroup")
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.MinIdle = time.Minute
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		switch m.Payload["verdict"] {
		case "fail":
			return errors.New("later")
		case "poison":
			return feed.Poison(errors.New("bad"))
		}
		return nil
	}
	c := mustOpen(t, cfg)
	add(t, rdb, s)
	add(t, rdb, s, "verdict", "fail")
	add(t, rdb, s, "verdict", "poison")
	addRaw(t, rdb, other, "id", "x")
	waitFor(t, 5*time.Second, "settled", func() bool { st := c.Stats(); return st.Acked+st.Failed+st.Dead == 3 })

	st, err := feed.Inspect(ctx, rdb, group, []string{s, other}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Group != group || len(st.Renderers) != 1 || st.Renderers[0] != "r1" {
		t.Errorf("status %+v", st)
	}
	got := st.Streams[0]
	if got.Game != "ins" || got.Length != 3 || got.Pending != 1 || got.Lag != 0 || got.Dead != 1 || got.Err != "" {
		t.Errorf("stream %+v", got)
	}
	if len(got.Consumers) != 1 || got.Consumers[0].Name != "r1" || got.Consumers[0].Pending != 1 || !got.Consumers[0].Alive {
		t.Errorf("consumers %+v", got.Consumers)
	}
	if !strings.Contains(st.Streams[1].Err, "no consumer group") || st.Streams[1].Length != 1 {
		t.Errorf("stream without group %+v", st.Streams[1])
	}
	waitFor(t, 5*time.Second, "pending gauge", func() bool { return gauge(t, "codemojex_feed_pending", "ins") == 1 })
	if lag := gauge(t, "codemojex_feed_lag", "ins"); lag != 0 {
		t.Errorf("lag gauge %v", lag)
	}
	c.Close()
	st, _ = feed.Inspect(ctx, rdb, group, []string{s}, nil)
	if len(st.Renderers) != 0 || st.Streams[0].Consumers[0].Alive {
		t.Errorf("after Close: %+v", st)
	}
}

// TestRequeueDeadFixed: an operator repairs a malformed entry's fields and
// requeues it in one step; the repaired entry is handled.
func TestRequeueDeadFixed(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("fix"), event.DeadKey("fix")
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = rec.handler
	c := mustOpen(t, cfg)
	addRaw(t, rdb, s, "id", "evt_broken", "kind", "chat", "player", "ana", "text", "hi")
	waitFor(t, 5*time.Second, "dead letter", func() bool { return c.Stats().Dead == 1 })
	dead, _ := feed.ListDead(ctx, rdb, dk, 0)
	good := minter.Next(time.Now())
	if _, err := feed.RequeueDeadFixed(ctx, rdb, s, dk, dead[0].DeadID, map[string]string{"id": good, "note": "fixed"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "fixed entry handled", func() bool { return rec.count(good) == 1 })
	m := rec.all()[0]
	if m.Payload["note"] != "fixed" || m.Payload["player"] != "ana" || len(m.Payload) != 4 {
		t.Errorf("payload %v", m.Payload)
	}
	xs, _ := rdb.XRange(ctx, s, "-", "+").Result()
	if last := xs[len(xs)-1]; last.Values["id"] != good {
		t.Errorf("requeued entry %v", last)
	}
	if n, _ := rdb.XLen(ctx, dk).Result(); n != 0 {
		t.Errorf("dead stream keeps %d", n)
	}
}

// TestDeadLetterKeepsOriginalDeadFields: an entry's own fields named like
// the dead letter's (dead_reason, dead_truncated, ...) are kept in its
// dead letter apart from the renderer's: they once sat beside them, so an
// original dead_truncated made the letter read as truncated (and refused
// for requeue), and an original dead_reason stood for the renderer's. The
// letter reads back as what the renderer said, and a requeue puts back
// exactly the original fields.
func TestDeadLetterKeepsOriginalDeadFields(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("deadnames"), event.DeadKey("deadnames")
	var broken atomic.Bool
	broken.Store(true)
	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if broken.Load() {
			return feed.Poison(errors.New("renderer bug"))
		}
		return rec.handler(ctx, m)
	}
	c := mustOpen(t, cfg)
	own := map[string]string{
		"dead_truncated": "text 9000 bytes sha256 00\n", "dead_dropped": "3 fields, 9 bytes",
		"dead_reason": "forged", "dead_attempts": "99", "dead_consumer": "mallory",
		"dead_stream_id": "1-1", "dead_at": "2000-01-01T00:00:00Z",
		"dead_field:dead_reason": "nested", "dead_": "bare",
	}
	var kv []string
	for k, v := range own {
		kv = append(kv, k, v)
	}
	id := add(t, rdb, s, kv...)
	waitFor(t, 5*time.Second, "dead letter", func() bool { return c.Stats().Dead == 1 })

	// One field of each renderer's name in the letter.
	raw, err := rdb.Do(ctx, "XRANGE", dk, "-", "+").Slice()
	if err != nil || len(raw) != 1 {
		t.Fatalf("XRANGE dead = %v, %v", raw, err)
	}
	flat := raw[0].([]any)[1].([]any)
	names := map[string]int{}
	for i := 0; i < len(flat); i += 2 {
		names[flat[i].(string)]++
	}
	for _, k := range []string{feed.DeadReason, feed.DeadAttempts, feed.DeadConsumer, feed.DeadStreamID, feed.DeadAt} {
		if names[k] != 1 {
			t.Errorf("the dead letter has %d fields named %s, want 1 (the renderer's): %q", names[k], k, flat)
		}
	}
	if names[feed.DeadTruncated] != 0 || names[feed.DeadDropped] != 0 {
		t.Errorf("a whole entry's dead letter carries %s or %s: %q", feed.DeadTruncated, feed.DeadDropped, flat)
	}

	dead, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("ListDead = %v, %v", dead, err)
	}
	d := dead[0]
	if d.Truncated != "" || d.Dropped != "" || d.Reason != "poison: renderer bug" || d.Attempts != 1 || d.Consumer != "r1" || d.StreamID == "1-1" || d.At.Year() == 2000 {
		t.Errorf("dead letter reads as %+v; want the renderer's reason, attempts, consumer, position and time, not truncated", d)
	}
	for k, v := range own {
		if d.Fields[k] != v {
			t.Errorf("original field %s = %q in the dead letter, want %q", k, d.Fields[k], v)
		}
	}
	if len(d.Fields) != 5+len(own) {
		t.Errorf("original fields %q, want the 5 of the entry and its %d own", d.Fields, len(own))
	}

	broken.Store(false)
	if _, err := feed.RequeueDead(ctx, rdb, s, dk, d.DeadID); err != nil {
		t.Fatalf("RequeueDead: %v", err)
	}
	waitFor(t, 5*time.Second, "requeued entry handled", func() bool { return rec.count(id) == 1 })
	m := rec.all()[0]
	for k, v := range own {
		if m.Payload[k] != v {
			t.Errorf("requeued field %s = %q, want %q", k, m.Payload[k], v)
		}
	}
	if len(m.Payload) != 4+len(own) {
		t.Errorf("requeued payload %q, want the entry's 4 fields and its %d own", m.Payload, len(own))
	}
}

// TestDeadLetterLeavesPeersEntry: an entry a peer claimed while this
// consumer's handler had it (here the handler itself moves it to "r2",
// as a peer's XAUTOCLAIM would) is the peer's to settle: this consumer's
// poison verdict writes no dead letter and acks nothing. The script once
// checked only that the entry was pending in the group, with anyone, and
// dead-lettered and acked an entry a live peer was handling.
func TestDeadLetterLeavesPeersEntry(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("peer-owned"), event.DeadKey("peer-owned")
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.MinIdle = time.Minute // r1 does not claim it back from r2
	poisonID := add(t, rdb, s, "verdict", "poison")
	add(t, rdb, s) // settled in the same pipeline: its ack says the batch is settled
	cfg.Handler = func(ctx context.Context, m feed.Message) error {
		if m.Payload["verdict"] != "poison" {
			return nil
		}
		if err := rdb.XClaimJustID(ctx, &redis.XClaimArgs{Stream: s, Group: group, Consumer: "r2", Messages: []string{m.Position}}).Err(); err != nil {
			t.Errorf("xclaim to r2: %v", err)
		}
		return feed.Poison(errors.New("bad"))
	}
	c := mustOpen(t, cfg)
	waitFor(t, 10*time.Second, "the batch settled", func() bool { return c.Stats().Acked == 1 })
	if n, err := rdb.XLen(ctx, dk).Result(); err != nil || n != 0 {
		t.Errorf("dead stream holds %d letters (%v); want none: the entry is r2's", n, err)
	}
	p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s, Group: group, Start: "-", End: "+", Count: 10}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 1 || p[0].Consumer != "r2" {
		t.Fatalf("pending %+v; want the poison entry (%s) pending with r2", p, poisonID)
	}
	if st := c.Stats(); st.Dead != 0 {
		t.Errorf("%d dead-lettered; want 0", st.Dead)
	}
}
