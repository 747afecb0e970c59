package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// TestClaimedOverPoisonLetterSaysClaimed: an entry whose position is
// claimed in the dead positions set (its letter's single-key steps
// stopped after the claim) stays pending while the claim is live, and
// each claim of it counts a delivery, so it can come back delivered more
// than PoisonAfter times. The delivery count was looked at first: the
// entry went to the dead letters as one that kept killing the process
// ("delivered N times without a verdict", reason attempts), and the
// take-over of the claim wrote that letter, though it had its verdict
// and its letter was under way. The claim is looked at first: the letter
// says claimed, counted under claimed, the handler never called.
func TestClaimedOverPoisonLetterSaysClaimed(t *testing.T) {
	ctx := context.Background()
	_, rdb := mustStart(t)
	s := stream("overclaimed")
	id := minter.Next(time.Now())
	pos := addRaw(t, rdb, s, "id", id, "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "player", "ana", "text", "hi")
	pendingWith(t, rdb, s, "r1")
	const poisonAfter = 2
	// Delivered ten times: claimed again and again while its claim was live.
	if err := rdb.Do(ctx, "XCLAIM", s, group, "r1", 0, pos, "RETRYCOUNT", 10, "JUSTID").Err(); err != nil {
		t.Fatal(err)
	}
	claimAt(t, rdb, "overclaimed", pos, 2*time.Minute) // now stale: its writer stopped

	var rec recorder
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.PoisonAfter = poisonAfter
	cfg.Handler = rec.handler // it would take the entry
	c := mustOpen(t, cfg)
	// Counted after its ack: wait for both.
	waitFor(t, 10*time.Second, "the entry settled", func() bool { return pending(t, rdb, s) == 0 && c.Stats().Dead > 0 })

	if n := rec.count(id); n != 0 {
		t.Errorf("the claimed entry was handed to the handler %d times; want none", n)
	}
	ds, err := feed.ListDead(ctx, rdb, event.DeadKeyOf(s), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].StreamID != pos {
		t.Fatalf("letters %+v; want the one of %s", ds, pos)
	}
	if ds[0].Attempts <= poisonAfter {
		t.Errorf("letter's attempts %d; want over PoisonAfter (%d), or the test proves nothing", ds[0].Attempts, poisonAfter)
	}
	if want := "dead letter under way (its position claimed)"; ds[0].Reason != want {
		t.Errorf("letter's reason %q, want %q", ds[0].Reason, want)
	}
	if n := feed.DeadOf(c, "claimed"); n != 1 {
		t.Errorf("%d letters counted under reason claimed, want 1", n)
	}
	if n := feed.DeadOf(c, "attempts"); n != 0 {
		t.Errorf("%d letters counted under reason attempts, want 0", n)
	}
}
