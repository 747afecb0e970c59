package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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
