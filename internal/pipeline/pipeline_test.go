package pipeline_test

import (
	"context"
	"errors"
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
	return feed.Message{ID: mint.Next(time.Now()), Kind: kind, Payload: p, Attempts: 1, Group: "feed", Stream: stream, Position: "1-0"}
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
