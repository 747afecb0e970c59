// Package pipeline turns consumed stream entries into stored, rendered lines:
// the renderer's batch handler and feedctl rebuild share it, so a rebuilt
// store holds exactly what the live one does.
package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
)

// Errors of the pipeline.
var (
	ErrNoGame = errors.New("pipeline: stream key names no valid game")
	// ErrFutureID marks an EVT id minted further ahead of its stream
	// entry's time than MaxAhead: a forged or broken producer clock, which
	// newer-wins would otherwise let take over the game's state for good.
	ErrFutureID = errors.New("pipeline: EVT id from the future")
)

// DefaultMaxAhead is MaxAhead's default.
const DefaultMaxAhead = 10 * time.Minute

// MaxAheadFloor is the shortest -future-bound the renderer and feedctl
// take. An EVT id's time is its writer's clock, its entry's position
// Redis's: a bound within the skew of two hosts' clocks would dead-letter
// an honest writer's entries as future ids.
const MaxAheadFloor = time.Second

// Pipeline renders and stores batches of messages.
type Pipeline struct {
	DB       *store.DB
	Renderer string // consumer name recorded with each stored line

	// Committed, when set, is called after a batch that stored at least one
	// new line was committed (the renderer rings the doorbell there).
	Committed func(ctx context.Context, inserted int)

	// MaxAhead bounds how far an EVT id's ULID time may be ahead of its
	// stream entry's time (the server's clock at XADD); further is
	// dead-lettered as "future id". Zero means DefaultMaxAhead; negative
	// turns the check off.
	MaxAhead time.Duration
	// Lines, when set, gets the lines a committed batch inserted, with
	// their seqs, in seq order, before Committed is called (the renderer
	// hands them to its own web server, see web.Server.Committed).
	Lines func(lines []store.Line)
}

// Handle is a feed.BatchHandler: it validates, renders and upserts a batch
// in one store transaction and returns each entry's own verdict. Invalid
// entries of known kinds are poison: retrying cannot fix bad input. A
// (game, EVT id) stored with another payload is poison labelled
// "conflict". A store that cannot write (full disk, I/O, locked, replaced
// file) is feed.Unavailable: no entry's fault, never counted toward poison.
func (p *Pipeline) Handle(ctx context.Context, ms []feed.Message) []error {
	return p.prepare(ms).commit(ctx, p)
}

// Prepare is feed.Config.Prepare: Handle in two halves. It validates and
// renders ms (pure: nothing is stored, nothing is published) and returns the
// rest of Handle, the upsert and the verdicts, to be called later. The feed
// prepares a batch while the one before it commits, so that rendering uses
// the second core (docs/benchmarks.md, issue 14). The verdicts are Handle's.
func (p *Pipeline) Prepare(_ context.Context, ms []feed.Message) func(context.Context) []error {
	b := p.prepare(ms)
	return func(ctx context.Context) []error { return b.commit(ctx, p) }
}

// prepared is a batch validated and rendered, not yet stored.
type prepared struct {
	verdicts []error       // one per message; set for those that failed to prepare
	evs      []store.Event // the others, rendered
	idx      []int         // evs[j] is message idx[j]
	batch    *store.Batch  // evs made ready for the store
}

func (p *Pipeline) prepare(ms []feed.Message) *prepared {
	b := &prepared{
		verdicts: make([]error, len(ms)),
		evs:      make([]store.Event, 0, len(ms)),
		idx:      make([]int, 0, len(ms)),
	}
	for i, m := range ms {
		ev, err := p.Event(m)
		if err != nil {
			b.verdicts[i] = err
			continue
		}
		b.evs = append(b.evs, ev)
		b.idx = append(b.idx, i)
	}
	b.batch = store.NewBatch(b.evs)
	return b
}

// commit upserts a prepared batch in one transaction and completes its
// verdicts.
func (b *prepared) commit(ctx context.Context, p *Pipeline) []error {
	verdicts, evs, idx := b.verdicts, b.evs, b.idx
	if len(evs) == 0 {
		return verdicts
	}
	res, err := p.DB.UpsertBatch(ctx, b.batch)
	if err != nil {
		if store.Unavailable(err) {
			err = feed.Unavailable(err)
		}
		for _, i := range idx {
			verdicts[i] = err
		}
		return verdicts
	}
	inserted := 0
	var lines []store.Line
	for j, r := range res {
		verdicts[idx[j]] = verdict(r.Err)
		if r.Err == nil && r.Inserted {
			inserted++
			if p.Lines != nil {
				e := &evs[j]
				lines = append(lines, store.Line{Seq: r.Seq, EvtID: e.EvtID, Game: e.Game, Kind: e.Kind, HTML: e.HTML, At: e.At})
			}
		}
	}
	if len(lines) > 0 {
		slices.SortFunc(lines, func(a, b store.Line) int { return cmp.Compare(a.Seq, b.Seq) })
		p.Lines(lines)
	}
	if inserted > 0 && p.Committed != nil {
		p.Committed(ctx, inserted)
	}
	return verdicts
}

// verdict maps a store Result.Err to the consumer's vocabulary.
func verdict(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrConflict):
		return feed.PoisonAs("conflict", err)
	case store.Unavailable(err):
		return feed.Unavailable(err)
	}
	return err
}

// Event validates m and renders its line. A validation failure is returned
// as a feed.Poison error; a rendering failure as a plain (retryable) error.
func (p *Pipeline) Event(m feed.Message) (store.Event, error) {
	game, ok := event.GameOfKey(m.Stream)
	if !ok {
		return store.Event{}, feed.Poison(fmt.Errorf("%w: %q", ErrNoGame, m.Stream))
	}
	if err := event.Validate(m.Kind, m.Payload); err != nil {
		return store.Event{}, feed.Poison(err)
	}
	if err := p.checkAhead(m); err != nil {
		return store.Event{}, feed.PoisonAs("future id", err)
	}
	at := event.ParseAt(m.Payload[event.FieldAt])
	html, err := templates.RenderLine(m.Kind, m.Payload, at)
	if err != nil {
		return store.Event{}, fmt.Errorf("pipeline: render %s: %w", m.ID, err)
	}
	return store.Event{
		EvtID:    m.ID,
		Game:     game,
		Kind:     m.Kind,
		Payload:  m.Payload,
		HTML:     html,
		StreamID: m.Position,
		Renderer: p.Renderer,
		Attempts: m.Attempts,
		At:       at,
	}, nil
}

// checkAhead refuses an EVT id whose time is more than MaxAhead past its
// stream entry's time. Newer-wins state follows the EVT id, so one entry
// minted a year ahead would otherwise own the game's title and status for
// good, whatever arrives after it and in whatever order; the bound keeps
// a forged entry from outranking more than MaxAhead of real events. The
// bound is measured from the entry's stream id, never from the clock
// alone, so the live read, a replay, a catch-up and feedctl rebuild judge
// an entry alike however late they read it
// (e2e/TestFutureIDJudgedByStreamTime).
//
// The entry's time is the server's clock only when XADD chose the
// position: a producer may pick it (XADD key <ms>-<seq>), as far ahead as
// Redis allows, and drag every later position of the stream along. So it
// counts as no later than this process's clock plus the bound (a clock
// behind the server's by less than the bound refuses nothing more), and
// as that when it does not fit a position's 63 bits. That cap is the one
// place the reader's clock counts: an entry so forged, refused when read
// before its position's time, passes when judged after it, since nothing
// tells its position from one the server chose. So nothing judges a
// dead-lettered position again: a replay, a catch-up and feedctl rebuild
// skip the positions in the dead positions set (feed.DeadPositions), and
// agree with the live read there too
// (e2e/TestRebuildSkipsDeadLetteredPositions,
// TestReplaySkipsDeadLetteredPositions,
// TestCatchUpSkipsDeadLetteredPositions).
func (p *Pipeline) checkAhead(m feed.Message) error {
	bound := p.MaxAhead
	if bound == 0 {
		bound = DefaultMaxAhead
	}
	if bound < 0 {
		return nil
	}
	idAt, ok := event.IDTime(m.ID)
	if !ok {
		return nil
	}
	posAt := time.Now().Add(bound)
	if ms, _, okPos := store.ParsePosition(m.Position); okPos && time.UnixMilli(int64(ms)).Before(posAt) {
		posAt = time.UnixMilli(int64(ms))
	}
	if ahead := idAt.Sub(posAt); ahead > bound {
		return fmt.Errorf("%w: %s is %s ahead of its stream entry %s (bound %v)",
			ErrFutureID, m.ID, howFar(idAt.UnixMilli()-posAt.UnixMilli()), m.Position, bound)
	}
	return nil
}

// howFar says a span of ms milliseconds as a Duration does, to the second,
// and in whole hours past the 292 years a Duration holds: an EVT id may be
// dated up to the year 10889, and its reason once said every id further
// than that ahead was 2562047h47m16.854775807s ahead, the Duration's cap
// (TestFutureIDReasonSaysHowFar).
func howFar(ms int64) string {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return fmt.Sprintf("%dh", ms/time.Hour.Milliseconds())
	}
	return (time.Duration(ms) * time.Millisecond).Round(time.Second).String()
}
