package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/untrusted"
	"github.com/codemojex/feed/store"
)

// pruneCandidate is a game the plan would remove.
type pruneCandidate struct {
	game       string
	registered bool  // in the registry, with a score at or below the cut
	lines      int64 // lines in the store (-db), else 0
	skip       string
	// marks of its keys (gameKeys) when the plan read them, before it
	// found them handled: the event stream's always, the others' with
	// -streams. What was added since is not deleted.
	marks map[string]string
}

// prunePlan lists the candidates: registered games whose score is at or
// below cut and whose stream (or store) says they ended or whose event
// stream is gone (remnant), and the store's
// ended games last written before cut (a host pruning after another has
// already taken them out of the registry).
func (g *global) prunePlan(ctx context.Context, db *store.DB, cut time.Time, streams bool) ([]pruneCandidate, error) {
	byGame := map[string]*pruneCandidate{}
	var order []string
	add := func(game string) *pruneCandidate {
		c := byGame[game]
		if c == nil {
			c = &pruneCandidate{game: game}
			byGame[game] = c
			order = append(order, game)
		}
		return c
	}
	old, err := g.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: event.RegistryKey, ByScore: true,
		Start: "-inf", Stop: strconv.FormatInt(cut.UnixMilli(), 10)}).Result()
	if err != nil {
		return nil, fmt.Errorf("prune: games registry: %w", err)
	}
	stored := map[string]store.Game{}
	if db != nil {
		ended, err := db.Ended(ctx, cut)
		if err != nil {
			return nil, err
		}
		for _, gm := range ended {
			stored[gm.Name] = gm
		}
	}
	for _, game := range old {
		if !event.ValidGame(game) {
			continue
		}
		_, inStore := stored[game]
		over, err := g.endedOnStream(ctx, game)
		if err != nil {
			return nil, err
		}
		if !over && !inStore {
			// A game without its event stream (or with an empty one: a
			// renderer's door brings it back) is what a run that stopped
			// or was late after deleting it left (a dead letter written
			// since, its run's DEL refused): registered still, with the
			// keys after the stream. Its game_over went with the stream
			// and its lines with the store, and it was taken for a quiet
			// game, for good (TestPruneFinishesGameLateAtItsDeadLetters).
			// Nothing of it can be read any more, and what remains is
			// planned as any game's is. One the store still holds, not
			// over, is kept: the store is all there is of it.
			rest, why, err := g.remnant(ctx, db, game, streams)
			if err != nil {
				return nil, err
			}
			if !rest {
				continue // quiet, not finished: retention is for ended games
			}
			add(game).skip = why
		}
		add(game).registered = true
	}
	for name, gm := range stored {
		add(name).lines = gm.Events
	}
	// The store's own candidates are for games another host's prune took
	// out of the registry. One the registry scores after the cut got an
	// event since (one the store did not take: dead-lettered, say) and is
	// live: it stays, here and in its streams (TestPruneKeepsStoreGameBackInRegistry).
	var unregistered []string
	for _, game := range order {
		if !byGame[game].registered {
			unregistered = append(unregistered, game)
		}
	}
	for names := range slices.Chunk(unregistered, 1000) {
		scores, err := g.rdb.ZMScore(ctx, event.RegistryKey, names...).Result()
		if err != nil {
			return nil, fmt.Errorf("prune: games registry: %w", err)
		}
		for i, game := range names {
			if ms := scores[i]; ms > float64(cut.UnixMilli()) { // 0: not registered
				byGame[game].skip = fmt.Sprintf("ended in the store, but its last event in the registry is at %s, after the cut",
					time.UnixMilli(int64(ms)).UTC().Format(time.RFC3339))
			}
		}
	}
	// A registered candidate is removed from the store too, whatever the
	// store says of it (a new match begun after the game_over, a game_over
	// the store never took): the plan must show its lines, or -dry-run and
	// the question hide what the run deletes.
	if db != nil {
		for _, game := range order {
			c := byGame[game]
			if _, ok := stored[game]; ok || !c.registered {
				continue
			}
			gm, err := db.Game(ctx, game)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return nil, err
			default:
				c.lines = gm.Events
			}
		}
	}
	out := make([]pruneCandidate, 0, len(order))
	for _, game := range order {
		c := byGame[game]
		if c.skip != "" {
			out = append(out, *c)
			continue
		}
		// Before the look at what the group handled: an entry added
		// after the mark may be unhandled, and is kept.
		keys := gameKeys(game)
		if !streams {
			keys = keys[:1]
		}
		c.marks = map[string]string{}
		for _, k := range keys {
			m, err := g.keyMark(ctx, k)
			if err != nil {
				return nil, fmt.Errorf("prune: %w", err)
			}
			c.marks[k] = m
		}
		if why, err := g.unhandled(ctx, game, c.marks[keys[0]]); err != nil {
			return nil, err
		} else if why != "" {
			c.skip = why
		}
		out = append(out, *c)
	}
	return out, nil
}

// endedOnStream reports whether one of the last 20 entries of a game's
// stream is its game_over. The last alone is asked first: an ended game's
// is most often its game_over, and the entries before it, which come in
// full, may be big.
func (g *global) endedOnStream(ctx context.Context, game string) (bool, error) {
	key := event.StreamKey(game)
	start, n := "+", int64(1)
	for range 2 {
		xs, err := g.rdb.XRevRangeN(ctx, key, start, "-", n).Result()
		if err != nil {
			return false, fmt.Errorf("prune: %s: %w", game, err)
		}
		for _, x := range xs {
			if k, _ := x.Values[event.FieldKind].(string); k == event.KindGameOver {
				return true, nil
			}
		}
		if int64(len(xs)) < n {
			return false, nil
		}
		start, n = "("+xs[len(xs)-1].ID, 19
	}
	return false, nil
}

// remnant reports whether game's event stream is gone, or empty, and db
// (when given) holds no line of it. Without -streams, one whose other keys
// remain is kept, saying why: unregistered, its dead letters would be
// found by no later run.
func (g *global) remnant(ctx context.Context, db *store.DB, game string, streams bool) (bool, string, error) {
	keys := gameKeys(game)
	// One key a command: on a cluster whose slot is migrating a command
	// of keys on two nodes is refused (TRYAGAIN).
	exists := func(k string) (bool, error) {
		n, err := g.rdb.Exists(ctx, k).Result()
		if err != nil {
			return false, fmt.Errorf("prune: %s: %w", game, err)
		}
		return n != 0, nil
	}
	// Empty is as gone: a renderer that meets the game as a new one (it
	// restarted) opens its door with MKSTREAM, and the stream is back
	// without an entry.
	if n, err := g.rdb.XLen(ctx, keys[0]).Result(); err != nil || n > 0 {
		if err != nil {
			err = fmt.Errorf("prune: %s: %w", game, err)
		}
		return false, "", err
	}
	if db != nil {
		switch _, err := db.Game(ctx, game); {
		case err == nil:
			return false, "", nil
		case !errors.Is(err, store.ErrNotFound):
			return false, "", fmt.Errorf("prune: %w", err)
		}
	}
	if !streams {
		for _, k := range keys[1:] {
			if ok, err := exists(k); err != nil {
				return false, "", err
			} else if ok {
				return true, fmt.Sprintf("its event stream is gone, but not %s (a prune -streams stopped half-way): prune -streams removes them", k), nil
			}
		}
	}
	return true, "", nil
}

// unhandled says why the group has not finished a game's stream ("" when
// it has, or when the stream is gone, or has no group at all: nothing
// consumes it). A stream read by other groups but not by this one is kept:
// the renderers run one of those (a -group left out or mistyped), whose
// pending and unread entries this check cannot see; taking that for done
// deleted such streams under -streams (TestPruneKeepsGameWithoutTheGroup).
// It compares the
// group's last-delivered id with the stream's last-generated id as the
// plan's mark read it (keyMark, mark) rather than trusting XINFO's lag,
// which a failover or a slot migration can leave wrong: an entry added
// since moves the mark, and the game is kept at its removal. The mark is
// not read again here: XINFO STREAM's answer holds the stream's first and
// last entries in full (TestPruneReadsBigEntryOnce).
func (g *global) unhandled(ctx context.Context, game, mark string) (string, error) {
	key := event.StreamKey(game)
	groups, err := g.rdb.XInfoGroups(ctx, key).Result()
	if err != nil {
		if noSuchKey(err) {
			return "", nil
		}
		return "", fmt.Errorf("prune: %s: %w", game, err)
	}
	found := false
	for _, gr := range groups {
		if gr.Name != g.group {
			continue
		}
		found = true
		if gr.Pending > 0 {
			return fmt.Sprintf("group %s has %d pending entries", g.group, gr.Pending), nil
		}
		last, _ := strings.CutPrefix(mark, "stream ")
		if last == "" {
			last = "0-0" // missing at the mark: what came since moved it
		}
		if event.ComparePos(gr.LastDeliveredID, last) < 0 {
			return fmt.Sprintf("group %s has not read up to %s", g.group, untrusted.Escape(last)), nil
		}
	}
	if !found && len(groups) > 0 {
		names := make([]string, len(groups))
		for i, gr := range groups {
			names[i] = gr.Name
		}
		return fmt.Sprintf("no group %s on its stream (groups: %s); the renderers' -group?",
			untrusted.Escape(g.group), untrusted.Escape(strings.Join(names, ", "))), nil
	}
	return "", nil
}
