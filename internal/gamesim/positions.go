package gamesim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/codemojex/feed/internal/event"
)

// position is a stream entry id that the writer chooses itself.
type position struct{ ms, seq uint64 }

func (p position) String() string {
	return strconv.FormatUint(p.ms, 10) + "-" + strconv.FormatUint(p.seq, 10)
}

func parsePosition(s string) (position, error) {
	a, b, ok := strings.Cut(s, "-")
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return position{}, fmt.Errorf("bad stream position %q", s)
	}
	return position{ms, seq}, nil
}

// resumeIDs is how many of a stream's last entries resume looks at for the
// greatest EVT id: the last ones may carry none (malformed on purpose).
const resumeIDs = 100

// resumeAhead is how far ahead of the clock an id resume goes on after may
// be: the renderers' default -future-bound. An id further ahead (a forged
// one, say) would make every id minted after it a "future id", dead-lettered
// until the clock caught up with it.
const resumeAhead = 10 * time.Minute

// resume starts each game's positions after its stream's last generated
// id, so that an earlier run's entries are never mistaken for ours, and
// its EVT ids after the greatest one among the stream's last entries (up
// to resumeAhead ahead of the clock): an earlier run's clock may have been
// ahead of ours (a step back since), or its last id in our first
// millisecond, and ids must go on increasing.
func (w *writer) resume(ctx context.Context) error {
	for _, g := range w.games {
		info, err := w.rdb.XInfoStream(ctx, g.sum.Stream).Result()
		if err != nil {
			if strings.Contains(err.Error(), "no such key") {
				continue
			}
			return fmt.Errorf("gamesim: xinfo %s: %w", g.sum.Stream, err)
		}
		if g.last, err = parsePosition(info.LastGeneratedID); err != nil {
			return fmt.Errorf("gamesim: %s: %w", g.sum.Stream, err)
		}
		xs, err := w.rdb.XRevRangeN(ctx, g.sum.Stream, "+", "-", resumeIDs).Result()
		if err != nil {
			return fmt.Errorf("gamesim: xrevrange %s: %w", g.sum.Stream, err)
		}
		limit := time.Now().Add(resumeAhead)
		for _, x := range xs {
			id, _ := x.Values[event.FieldID].(string)
			if at, ok := event.IDTime(id); ok && !at.After(limit) {
				w.minter.After(id)
			}
		}
	}
	return nil
}

// holds reports whether e's stream holds e at e.pos. With MaxLen, an
// entry below the stream's first one may have been trimmed since: it is
// taken as written.
func (w *writer) holds(ctx context.Context, e *entry) (bool, error) {
	xs, err := w.rdb.XRangeN(ctx, e.g.sum.Stream, e.pos, e.pos, 1).Result()
	if err != nil {
		return false, err
	}
	if len(xs) == 1 {
		want := make(map[string]any, len(e.values)/2)
		for i := 0; i+1 < len(e.values); i += 2 {
			want[e.values[i]] = e.values[i+1]
		}
		if len(want) != len(xs[0].Values) {
			return false, nil
		}
		for k, v := range want {
			if xs[0].Values[k] != v {
				return false, nil
			}
		}
		return true, nil
	}
	if w.cfg.MaxLen == 0 {
		return false, nil
	}
	first, err := w.rdb.XRangeN(ctx, e.g.sum.Stream, "-", "+", 1).Result()
	if err != nil {
		return false, err
	}
	return len(first) == 1 && event.ComparePos(e.pos, first[0].ID) < 0, nil
}

// reposition gives e a new position of its own above its stream's top.
func (w *writer) reposition(ctx context.Context, e *entry) error {
	info, err := w.rdb.XInfoStream(ctx, e.g.sum.Stream).Result()
	if err != nil {
		return err
	}
	if event.ComparePos(info.LastGeneratedID, e.g.last.String()) > 0 {
		top, err := parsePosition(info.LastGeneratedID)
		if err != nil {
			return err
		}
		e.g.last = top
	}
	e.pos = e.g.next(uint64(time.Now().UnixMilli())).String()
	return nil
}

// alreadyWritten recognises XADD's refusal of an explicit id that is not
// above the stream's top ("ERR The ID specified in XADD is equal or smaller
// than the target stream top item", the same in Redis 7 and Valkey).
func alreadyWritten(err error) bool {
	return err != nil && strings.Contains(err.Error(), "equal or smaller")
}
