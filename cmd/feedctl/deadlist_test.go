package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestDeadListSaysWhenThereAreMore: dead list shows the oldest -n (100)
// dead letters, and its last line says how many the game has when that is
// more than it shows. It said "3 dead letters" of a game with 5, the same
// as of a game with 3, so an operator took the first page for the whole.
func TestDeadListSaysWhenThereAreMore(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	for i := range 5 {
		err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: event.DeadKey("g1"), Values: []any{
			"id", fmt.Sprintf("bad-%d", i), event.FieldKind, "chat",
			feed.DeadReason, "feed: malformed entry: invalid id", feed.DeadAttempts, "1",
			feed.DeadConsumer, "r1", feed.DeadStreamID, fmt.Sprintf("1-%d", i),
		}}).Err()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		n    string
		rows int
		last string
	}{
		{"3", 3, "3 of 5 dead letters, the oldest (-n 0: all)"},
		{"5", 5, "5 dead letters"},
		{"9", 5, "5 dead letters"},
		{"0", 5, "5 dead letters"},
	} {
		out := mustRunCtl(t, s.Addr, "dead", "list", "-game", "g1", "-n", tt.n)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != tt.rows+2 || lines[len(lines)-1] != tt.last {
			t.Errorf("dead list -n %s: %d rows, last line %q; want %d rows, %q\n%s", tt.n, len(lines)-2, lines[len(lines)-1], tt.rows, tt.last, out)
		}
	}
	// A negative count is refused, as status -recent 0 is: it listed all.
	if out, _, err := runCtl(t, s.Addr, "dead", "list", "-game", "g1", "-n", "-1"); err == nil || !strings.Contains(err.Error(), "-n -1") {
		t.Errorf("dead list -n -1: %v, want it refused\n%s", err, out)
	}
}

// TestDeadAllOfNoneSaysSo: dead drop -all and dead requeue -all of a game
// with no dead letters (a mistyped -game, or one already emptied) say so
// and succeed, with -yes, -dry-run or neither. With -yes they printed
// nothing at all (exit 0, as if something was done), and without it drop
// refused to drop nothing until confirmed (exit 1).
func TestDeadAllOfNoneSaysSo(t *testing.T) {
	s := redistest.MustStart(t)
	for _, sub := range []string{"drop", "requeue"} {
		for _, mode := range [][]string{nil, {"-yes"}, {"-dry-run"}} {
			args := append([]string{"dead", sub, "-game", "nosuch-1", "-all"}, mode...)
			out, errOut, err := runCtl(t, s.Addr, args...)
			want := "no dead letters of nosuch-1: nothing to " + sub + "\n"
			if err != nil || out != want {
				t.Errorf("%q: %v, stdout %q, want %q\nstderr: %s", args, err, out, want, errOut)
			}
		}
	}
}
