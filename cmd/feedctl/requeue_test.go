package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestRequeueWakesRenderers: a dead letter requeued on a quiet game is
// handled at once. Renderers read a game when its registry score moves
// (docs/reader-law.md, "The read set"), so a requeue, which appends to the
// stream like any writer, must move the score as writers do; otherwise the
// entry waits for the poll, a round over every game (100 s at 100,000
// games; here -poll-every stands for it at an hour), or, once the game
// left the registry, for a writer that never comes.
func TestRequeueWakesRenderers(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "quiet-1"
	evs := gamesim.Play(game, 1, 2)
	var (
		mu      sync.Mutex
		fixed   bool
		handled = map[string]int{}
	)
	c := openQuietConsumer(t, rdb, "r1", func(_ context.Context, m feed.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if !fixed && m.Kind == evs[1].Kind {
			return feed.Poison(errors.New("renderer bug"))
		}
		handled[m.ID]++
		return nil
	})
	ids, err := gamesim.Append(ctx, rdb, event.NewMinter(1), game, evs...)
	if err != nil {
		t.Fatal(err)
	}
	wait.For(t, 10*time.Second, "one entry handled, one dead-lettered, the game quiet", func() bool {
		st := c.Stats()
		return st.Acked == 1 && st.Dead == 1 && st.Known == 1 && st.Hot == 0 && st.Working == 0
	})
	mu.Lock()
	fixed = true
	mu.Unlock()
	mustRunCtl(t, s.Addr, "dead", "requeue", "-game", game, "-id", oneDead(t, rdb, game).DeadID)
	wait.For(t, 5*time.Second, "the requeued entry handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return handled[ids[1]] == 1
	})
}

// TestRequeueOriginalDeadFields: an entry carrying fields named like the
// dead letter's own (dead_truncated, dead_reason) is dead-lettered as
// invalid; `dead list` shows the renderer's reason, not truncated, and
// `dead requeue -set` puts the repaired entry back with those fields as
// they were. An original dead_truncated once made the letter read as
// truncated, and requeue refused it for good.
func TestRequeueOriginalDeadFields(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	const game = "deadnames-1"
	var (
		mu      sync.Mutex
		handled []feed.Message
	)
	c := openQuietConsumer(t, rdb, "r1", func(_ context.Context, m feed.Message) error {
		if err := event.Validate(m.Kind, m.Payload); err != nil {
			return feed.Poison(err)
		}
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, m)
		return nil
	})
	own := []gamesim.Field{{Name: "dead_truncated", Value: "text 9000 bytes sha256 00\n"}, {Name: "dead_reason", Value: "forged"}}
	ids, err := gamesim.Append(ctx, rdb, event.NewMinter(1), game, gamesim.Event{Kind: event.KindChat,
		Fields: append([]gamesim.Field{{Name: "player", Value: " "}, {Name: "text", Value: "hi"}}, own...)})
	if err != nil {
		t.Fatal(err)
	}
	wait.For(t, 10*time.Second, "the entry dead-lettered", func() bool { return c.Stats().Dead == 1 })
	out, errOut, err := runCtl(t, s.Addr, "dead", "list", "-game", game)
	if err != nil || strings.Contains(out, "truncated") || strings.Contains(out, "forged") || !strings.Contains(out, `poison: invalid entry: chat: field "player": empty`) {
		t.Errorf("dead list (%v) shows:\n%s%s\nwant the renderer's reason, not truncated", err, out, errOut)
	}
	mustRunCtl(t, s.Addr, "dead", "requeue", "-game", game, "-id", oneDead(t, rdb, game).DeadID, "-set", "player=ada")
	wait.For(t, 5*time.Second, "the requeued entry handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == 1
	})
	m := handled[0]
	if m.ID != ids[0] || m.Payload["player"] != "ada" || len(m.Payload) != 6 {
		t.Errorf("requeued entry %s %q, want %s with its 6 fields", m.ID, m.Payload, ids[0])
	}
	for _, f := range own {
		if m.Payload[f.Name] != f.Value {
			t.Errorf("requeued %s = %q, want %q", f.Name, m.Payload[f.Name], f.Value)
		}
	}
}

// The fields -set gives are printed as they are typed, in field order
// ("requeued … with exact=1 near=0"): Go's map syntax printed
// map[exact:1 near:0].
func TestSetFlagsString(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{nil, ""},
		{[]string{"near=0", "exact=1"}, "exact=1 near=0"},
		{[]string{"text=two words", "player="}, `player="" text="two words"`},
		{[]string{"player=ada", "player=bob"}, "player=bob"},
	} {
		s := setFlags{}
		for _, v := range tc.set {
			if err := s.Set(v); err != nil {
				t.Fatal(err)
			}
		}
		if got := s.String(); got != tc.want {
			t.Errorf("-set %q: String() = %q, want %q", tc.set, got, tc.want)
		}
	}
}

// TestRequeueNamesEveryMissingField: a dead letter lacking several fields
// (gamesim's malformed guess has neither exact nor near) is refused naming
// every one of them, so that one dry run tells which -set fixes it. The
// refusal named the first missing field only ("exact"), and -set exact=1
// was then refused again for "near".
func TestRequeueNamesEveryMissingField(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	const game = "guess-1"
	vals := []any{event.FieldID, event.NewMinter(1).Next(time.Now()), event.FieldKind, event.KindGuess,
		event.FieldAt, event.FormatAt(time.Now()), "player", "ada", "round", "1", "guess", "🍎🍌🍇🍉",
		feed.DeadReason, `poison: invalid entry: guess: missing field "exact"`}
	dead, err := rdb.XAdd(context.Background(), (&redisXAdd{event.DeadKey(game), vals}).args()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		set  []string
		want string // in the output
	}{
		{nil, `refused ` + dead + `: would fail again: invalid entry: guess: missing fields "exact", "near"`},
		{[]string{"exact=1"}, `refused ` + dead + `: would fail again: invalid entry: guess: missing field "near"` + "\n"},
		{[]string{"exact=x"}, `missing field "near"; field "exact": not a decimal integer`},
		{[]string{"exact=1", "near=0"}, "would requeue " + dead},
	} {
		args := []string{"dead", "requeue", "-game", game, "-id", dead, "-dry-run"}
		for _, f := range tt.set {
			args = append(args, "-set", f)
		}
		out, errOut, err := runCtl(t, s.Addr, args...)
		if !strings.Contains(out, tt.want) {
			t.Errorf("-set %q: %v, output\n%s%s\nwant %q", tt.set, err, out, errOut, tt.want)
		}
	}
}
