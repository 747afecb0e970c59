package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/flagenv"
	"github.com/codemojex/feed/internal/pipeline"
	"github.com/codemojex/feed/internal/untrusted"
	"github.com/codemojex/feed/store"
)

const rebuildBatch = 500

// rebuild builds a store from every registered game's stream, from the
// start, through the renderer's own pipeline. Running it again changes
// nothing: the upsert is keyed by EVT id. A position the renderers
// dead-lettered is skipped (rebuildGame), so that the new store holds what
// a live one does.
//
// Onto an existing file it asks first (or needs -yes): the store may be a
// live one, and a rebuild from streams that no longer hold everything
// would mix old lines with new.
func (g *global) rebuild(ctx context.Context, args []string, t terminal, stdout, stderr io.Writer) error {
	var path string
	var c care
	fs := flagenv.New("rebuild")
	fs.SetOutput(stderr)
	fs.StringVar(&path, "db", "", "SQLite file to build (created when missing)")
	c.flags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if path == "" {
		return errors.New("rebuild: -db is required")
	}
	if err := g.open(ctx); err != nil {
		return err
	}
	defer g.rdb.Close()
	games, err := g.games(ctx)
	if err != nil {
		return err
	}
	fi, statErr := os.Stat(path)
	exists := statErr == nil
	// Before the dry run's plan and the question, which call it a store:
	// the open refuses such a file, but only once answered
	// (TestRebuildRefusesNotAStore).
	if ns := (*store.NotStoreError)(nil); exists && errors.As(store.Probe(ctx, path), &ns) {
		return fmt.Errorf("rebuild: -db %s: %s: not a store; give a new file, or a store to add to",
			untrusted.Escape(path), ns.Why)
	}
	// So is a store of a newer release, which the open refuses: the dry
	// run promised to rebuild into it, and the question was asked, for a
	// run refused once answered (TestRebuildRefusesNewerSchema). Other
	// failures of this look are left to the open, which reports them.
	if exists {
		ro, err := store.OpenReadOnly(ctx, path)
		if errors.Is(err, store.ErrSchemaNewer) {
			return fmt.Errorf("rebuild: -db %s: %w; rebuild with the feedctl of the renderers' release, or into a new file",
				untrusted.Escape(path), err)
		}
		if err == nil {
			ro.Close()
		}
	}
	if c.dryRun {
		var n int64
		for _, game := range games {
			l, err := g.rdb.XLen(ctx, event.StreamKey(game)).Result()
			if err != nil {
				return fmt.Errorf("rebuild %s: %w", game, err)
			}
			n += l
		}
		into := "a new file"
		if exists {
			into = fmt.Sprintf("the existing file (%d bytes; lines already there are kept)", fi.Size())
		}
		fmt.Fprintf(stdout, "dry run: would rebuild %s from %d games, %d retained entries, into %s\n",
			untrusted.Escape(path), len(games), n, into)
		return nil
	}
	if exists {
		if err := c.confirm(t, fmt.Sprintf("rebuild into the existing store %s", untrusted.Escape(path))); err != nil {
			return err
		}
	}
	db, err := store.OpenWith(ctx, path, storeOptions(stderr))
	if err != nil {
		return err
	}
	defer db.Close()
	p := &pipeline.Pipeline{DB: db, Renderer: "rebuild", MaxAhead: g.futureBound}
	var total, inserted, skipped int
	for i, game := range games {
		n, ins, skip, err := rebuildGame(ctx, g, p, game)
		if err != nil {
			return fmt.Errorf("rebuild %s: %w", game, err)
		}
		total, inserted, skipped = total+n, inserted+ins, skipped+skip
		fmt.Fprintf(stderr, "rebuild: %d/%d %s: %d entries, %d new lines, %d skipped\n",
			i+1, len(games), game, n, ins, skip)
	}
	fmt.Fprintf(stdout, "rebuilt %s: %d games, %d entries, %d new lines, %d skipped (dead-lettered by the renderers, or malformed, refused or in conflict: the renderers dead-letter them)\n",
		untrusted.Escape(path), len(games), total, inserted, skipped)
	return nil
}

// rebuildGame rebuilds one game's stream into p's store and counts its
// entries, the lines new to the store and the entries skipped.
//
// An entry whose position is in the game's dead positions set (its dead
// letter's, docs/contracts.md "Keys") is skipped without a look: the
// renderers refused it, and the live store has no line of it. Most such
// entries the pipeline refuses again, but not every one: a stream id
// forged more than -future-bound ahead of the renderers' clock is a
// future id when read before its time and passes once that time has
// come, an entry dead-lettered after -poison-after failed deliveries is
// well formed, and a conflict depends on what was stored first. Judged
// afresh, such entries made lines the live store never had
// (e2e/TestRebuildSkipsDeadLetteredPositions). A requeued letter is a new
// entry at a new position, so its copy is rebuilt. The renderers' catch-up
// and a replay skip the same positions (feed.DeadPositions), one ZMSCORE
// per page.
func rebuildGame(ctx context.Context, g *global, p *pipeline.Pipeline, game string) (n, inserted, skipped int, err error) {
	key := event.StreamKey(game)
	deadKey := event.DeadKey(game)
	start := "-"
	for {
		xs, err := g.rdb.XRangeN(ctx, key, start, "+", rebuildBatch).Result()
		if err != nil {
			return n, inserted, skipped, err
		}
		if len(xs) == 0 {
			return n, inserted, skipped, nil
		}
		dead, err := feed.DeadEntries(ctx, g.rdb, key, deadKey, xs)
		if err != nil {
			// Stopped, not judged afresh as a renderer does: an operator
			// is there to mend the key (another type under it, say) and
			// run it again, and a store rebuilt without the set could
			// hold lines no live store has.
			return n, inserted, skipped, fmt.Errorf("%s: %w", feed.DeadPositionsKey(deadKey), err)
		}
		evs := make([]store.Event, 0, len(xs))
		for i, x := range xs {
			if dead[i] {
				skipped++
				continue
			}
			m, err := feed.Decode(key, x)
			if err != nil {
				skipped++
				continue
			}
			ev, err := p.Event(m)
			if err != nil {
				skipped++
				continue
			}
			evs = append(evs, ev)
		}
		res, err := p.DB.Upsert(ctx, evs)
		if err != nil {
			return n, inserted, skipped, err
		}
		for _, r := range res {
			if errors.Is(r.Err, store.ErrConflict) {
				// The renderer dead-letters it and keeps the first line.
				skipped++
				continue
			}
			if r.Err != nil {
				return n, inserted, skipped, r.Err
			}
			if r.Inserted {
				inserted++
			}
		}
		n += len(xs)
		start = "(" + xs[len(xs)-1].ID
	}
}
