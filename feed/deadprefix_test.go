package feed_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestDeadLetterKeepsLongestPrefix: a value, a field name and a reason past
// their caps, written in three-byte characters (★, CJK), keep the longest
// prefix that ends on a character boundary, not a single character.
func TestDeadLetterKeepsLongestPrefix(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s, dk := stream("stars"), event.DeadKey("stars")
	cfg := baseConfig(t, rdb, "r1", s)
	reason := strings.Repeat("日", 600) // 1800 bytes
	cfg.Handler = func(context.Context, feed.Message) error { return feed.Poison(errors.New(reason)) }
	c := mustOpen(t, cfg)

	value := strings.Repeat("★", 200) // 600 bytes, over the 512 kept
	name := strings.Repeat("名", 50)   // 150 bytes, over the 128 kept
	add(t, rdb, s, "text", value, name, "v")
	waitFor(t, 5*time.Second, "a dead letter", func() bool { return c.Stats().Dead == 1 })

	dead, err := feed.ListDead(ctx, rdb, dk, 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("ListDead = %v, %v", dead, err)
	}
	d := dead[0]
	if got := d.Fields["text"]; len(got) != 510 || !strings.HasPrefix(value, got) || !utf8.ValidString(got) {
		t.Errorf("value kept: %d bytes, want the 510-byte prefix (170 ★)", len(got))
	}
	var kept string
	for k := range d.Fields {
		if strings.HasPrefix(name, k) && k != "" {
			kept = k
		}
	}
	if len(kept) != 126 {
		t.Errorf("field name kept: %d bytes (%q), want the 126-byte prefix; fields %v", len(kept), kept, d.Fields)
	}
	if got := strings.TrimPrefix(d.Reason, "poison: "); len(got) < 1000 || !strings.HasPrefix(reason, got) || !utf8.ValidString(got) {
		t.Errorf("reason kept: %d bytes, want about 1 KiB of it", len(d.Reason))
	}
}
