package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/pipeline"
	"github.com/codemojex/feed/store"
)

func MustOpenPipeline(tb testing.TB) (*pipeline.Pipeline, *int) {
	tb.Helper()
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "feed.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	rings := new(int)
	return &pipeline.Pipeline{DB: db, Renderer: "r1", Committed: func(context.Context, int) { *rings++ }}, rings
}

var mint = event.NewMinter(1)

func msg(stream, kind string, kv ...string) feed.Message {
	p := map[string]string{"kind": kind, "at": time.Now().UTC().Format(time.RFC3339Nano)}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return feed.Message{ID: mint.Next(time.Now()), Kind: kind, Payload: p, Attempts: 1, Group: "feed", Stream: stream, Position: fmt.Sprintf("%d-0", time.Now().UnixMilli())}
}

func TestHandleVerdicts(t *testing.T) {
	p, rings := MustOpenPipeline(t)
	s := event.StreamKey("g")
	good := msg(s, "chat", "player", "ada", "text", "hi")
	tests := []struct {
		name   string
		m      feed.Message
		poison bool
	}{
		{"good", good, false},
		{"unknown kind is stored", msg(s, "emote", "player", "ada"), false},
		{"invalid field is poison", msg(s, "guess", "player", "ada", "round", "1", "guess", "🍎", "exact", "abc", "near", "0"), true},
		{"missing field is poison", msg(s, "chat", "player", "ada"), true},
		{"stream without a game is poison", msg("other:stream", "chat", "player", "ada", "text", "hi"), true},
		{"a signed number is poison", msg(s, "round_started", "round", "+5"), true},
		{"a player name with CR is poison", msg(s, "player_left", "player", "a\rb"), true},
		{"a player name with NUL is poison", msg(s, "chat", "player", "a\x00b", "text", "hi"), true},
		{"a duplicate is acked", good, false},
	}
	ms := make([]feed.Message, len(tests))
	for i, tt := range tests {
		ms[i] = tt.m
	}
	verdicts := p.Handle(context.Background(), ms)
	for i, tt := range tests {
		err := verdicts[i]
		switch {
		case tt.poison && !errors.Is(err, feed.ErrPoison):
			t.Errorf("%s: verdict %v, want poison", tt.name, err)
		case !tt.poison && err != nil:
			t.Errorf("%s: verdict %v, want nil", tt.name, err)
		}
	}
	if *rings != 1 {
		t.Errorf("doorbell rung %d times for one batch with new lines, want 1", *rings)
	}
	n, err := p.DB.Count(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("stored %d lines (%v), want 2", n, err)
	}
	// A batch of duplicates only stores nothing and rings nothing.
	for _, err := range p.Handle(context.Background(), []feed.Message{good}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if *rings != 1 {
		t.Errorf("doorbell rung for a batch that stored nothing")
	}
}

// TestPrepareThenCommit: Prepare stores and publishes nothing; the commit
// it returns gives Handle's verdicts, and batches prepared ahead commit in
// the order their commits are called.
func TestPrepareThenCommit(t *testing.T) {
	p, rings := MustOpenPipeline(t)
	var got []store.Line
	p.Lines = func(ls []store.Line) { got = append(got, ls...) }
	ctx := context.Background()
	s := event.StreamKey("g")
	first := []feed.Message{msg(s, "chat", "player", "ada", "text", "one"), msg(s, "chat", "player", "ada")}
	second := []feed.Message{msg(s, "chat", "player", "bo", "text", "two"), first[0]}

	c1 := p.Prepare(ctx, first)
	c2 := p.Prepare(ctx, second)
	if n, err := p.DB.Count(ctx); err != nil || n != 0 || *rings != 0 || len(got) != 0 {
		t.Fatalf("after Prepare: %d lines stored (%v), %d rings, %d lines handed over; want none", n, err, *rings, len(got))
	}
	v1 := c1(ctx)
	if v1[0] != nil || !errors.Is(v1[1], feed.ErrPoison) {
		t.Fatalf("first batch verdicts %v, want nil and poison", v1)
	}
	v2 := c2(ctx)
	if v2[0] != nil || v2[1] != nil {
		t.Fatalf("second batch verdicts %v, want nil, nil (a duplicate is acked)", v2)
	}
	if *rings != 2 {
		t.Errorf("doorbell rung %d times, want 2", *rings)
	}
	if len(got) != 2 || got[0].EvtID != first[0].ID || got[1].EvtID != second[0].ID || got[0].Seq >= got[1].Seq {
		t.Fatalf("lines handed over %+v, want %s then %s in seq order", got, first[0].ID, second[0].ID)
	}
}

// TestAtStoredAsShown: an entry's at is display only, but whatever its
// value the stored line keeps the time its HTML shows (the replay's
// timeline.json serves it): a year the store cannot hold as unix
// nanoseconds (before 1678, after 2262) came back as another time (year 0
// as 1753), while the line showed the year the writer sent.
func TestAtStoredAsShown(t *testing.T) {
	p, _ := MustOpenPipeline(t)
	s := event.StreamKey("g")
	for _, at := range []string{"0000-01-01T00:00:00Z", "1500-06-01T12:00:00Z", "1677-09-21T00:00:00Z",
		"2262-04-12T00:00:00Z", "2300-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-11-29T10:00:00Z"} {
		m := msg(s, "chat", "player", "ada", "text", at)
		m.Payload["at"] = at
		if v := p.Handle(context.Background(), []feed.Message{m}); v[0] != nil {
			t.Fatalf("at %s: %v", at, v[0])
		}
		tl, err := p.DB.Timeline(context.Background(), "g")
		if err != nil {
			t.Fatal(err)
		}
		l := tl[len(tl)-1]
		shown := ""
		if i := strings.Index(l.HTML, `datetime="`); i >= 0 {
			shown, _, _ = strings.Cut(l.HTML[i+len(`datetime="`):], `"`)
		}
		stored := ""
		if !l.At.IsZero() {
			stored = l.At.Format(time.RFC3339)
		}
		if shown != stored {
			t.Errorf("at %s: the line shows %q, the store keeps %q", at, shown, stored)
		}
	}
}
