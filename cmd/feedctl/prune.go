package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/flagenv"
	"github.com/codemojex/feed/internal/untrusted"
	"github.com/codemojex/feed/store"
)

// zremIfOld removes a game from the registry only while its score is at or
// below the cut: a writer that appended to the game since the plan was made
// keeps it. One key, so it runs on a cluster as it does on one node.
var zremIfOld = redis.NewScript(`
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if s and tonumber(s) <= tonumber(ARGV[2]) then
	return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0`)

// prune removes the games that ended more than -older-than ago from the
// registry and, with -db, from that store (run it on every host with its
// own -db: the registry is shared, the stores are not). With -streams it
// deletes their event and dead-letter streams too. A game is kept while
// the group has not handled all of its stream (lag or pending entries).
func (g *global) prune(ctx context.Context, args []string, t terminal, stdout, stderr io.Writer) error {
	var (
		olderThan time.Duration
		dbPath    string
		streams   bool
		ask       care
	)
	fs := flagenv.New("prune")
	fs.SetOutput(stderr)
	fs.DurationVar(&olderThan, "older-than", 0, "remove games whose last event is older than this (e.g. 720h); required")
	fs.StringVar(&dbPath, "db", "", "this host's store to prune too (optional)")
	fs.BoolVar(&streams, "streams", false, "delete the games' event and dead-letter streams too (no replay or rebuild of them afterwards)")
	ask.flags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if olderThan <= 0 {
		return errors.New("prune: -older-than is required and must be positive")
	}
	if err := g.open(ctx); err != nil {
		return err
	}
	defer g.rdb.Close()
	cut := time.Now().Add(-olderThan)
	var db *store.DB
	planOnly := false // db is open read-only, for the plan
	if dbPath != "" {
		fi, err := os.Stat(dbPath)
		if err != nil {
			return fmt.Errorf("prune: -db: %w", err)
		}
		if fi.Mode().IsRegular() && fi.Size() == 0 {
			// SQLite takes an empty file for an empty database: it is no
			// store (a store has its header and schema from its first
			// open), but a mistyped path something created, or a store
			// truncated in place. SQLite's words for it were "schema: SQL
			// logic error: no such table: schema_migrations (1)"
			// (TestPruneRefusesEmptyFile).
			return fmt.Errorf("prune: -db %s: empty file (0 bytes): not a store; give this host's store, the renderers' -db",
				untrusted.Escape(dbPath))
		}
		// The plan reads the store and writes nothing: store.Open would
		// apply pending migrations (under older renderers sharing the
		// file) and, on a copied file, record its identity and move its
		// positions back, for a dry run (TestPruneDryRunWritesNothing) or
		// a run then refused or declined (TestPruneDeclinedWritesNothing).
		// The file is opened for writing once the removal is confirmed.
		// One too old to be read unmigrated must be migrated for the
		// plan: that is asked first, so a run refused or answered no
		// leaves it as it was too (TestPruneOlderSchemaAsksFirst).
		db, err = store.OpenReadOnly(ctx, dbPath)
		if ns := (*store.NotStoreError)(nil); errors.As(err, &ns) {
			// Another program's database, or no database: refused in
			// the empty file's words. They were refused in SQLite's,
			// "schema: SQL logic error: no such table: schema_migrations
			// (1)" and "schema: file is not a database (26)"
			// (TestPruneRefusesNotAStore).
			return fmt.Errorf("prune: -db %s: %s: not a store; give this host's store, the renderers' -db",
				untrusted.Escape(dbPath), ns.Why)
		}
		planOnly = err == nil
		if errors.Is(err, store.ErrSchemaOlder) && !ask.dryRun {
			what := fmt.Sprintf("prune: %s; migrate it to this release's schema (as its renderers would) to read the plan",
				untrusted.Escape(err.Error()))
			if cerr := ask.confirm(t, what); cerr != nil {
				return fmt.Errorf("%w; nothing written", cerr)
			}
			db, err = store.OpenWith(ctx, dbPath, storeOptions(stderr))
		}
		if err != nil {
			return err
		}
		defer func() { db.Close() }()
	}
	// Seqs grow in commit order (docs/store.md, "Two orders"): a line
	// stored after this read has a higher one, and a game holding such a
	// line got an event since the plan; it is not deleted (DeleteGameUpTo).
	// Read before the plan, so that whatever the plan saw is at or below it.
	var bound int64
	if db != nil {
		b, err := db.HighSeq(ctx)
		if err != nil {
			return fmt.Errorf("prune: %w", err)
		}
		bound = b
	}
	plan, err := g.prunePlan(ctx, db, cut, streams)
	if err != nil {
		return err
	}
	var todo []pruneCandidate
	for _, c := range plan {
		where := []string{}
		if c.registered {
			where = append(where, "registry")
		}
		if c.lines > 0 {
			where = append(where, fmt.Sprintf("store (%d lines)", c.lines))
		}
		if streams {
			where = append(where, "streams")
		}
		if c.skip != "" {
			fmt.Fprintf(stdout, "keep   %s: %s\n", c.game, c.skip)
			continue
		}
		fmt.Fprintf(stdout, "remove %s: %s\n", c.game, strings.Join(where, ", "))
		todo = append(todo, c)
	}
	fmt.Fprintf(stdout, "%d games ended before %s; %d to remove\n", len(plan), cut.UTC().Format(time.RFC3339), len(todo))
	if ask.dryRun || len(todo) == 0 {
		return nil
	}
	if err := ask.confirm(t, fmt.Sprintf("prune: remove %d games", len(todo))); err != nil {
		return fmt.Errorf("%w; nothing removed", err)
	}
	pruneStep("", stepOpen)
	if planOnly {
		// The plan, and the bound, were read from the file opened then:
		// another put in its place since (a backup restored while the
		// question was asked) is refused, looked for before it is opened
		// for writing (whose first open of a copy moves its positions
		// back) and once it is, and before each game's deletion
		// (DeleteGameUpTo). Until 7 Dec 2026 prune deleted the planned
		// games from whatever file the path named
		// (TestPruneRefusesStoreSwappedSincePlan).
		if err := db.CheckFile(); err != nil {
			return swapped(dbPath, err, 0)
		}
		if err := db.Close(); err != nil {
			return err
		}
		// db stays the closed read-only DB until this open succeeds: the
		// deferred Close must not be handed the nil of a failed open
		// (TestPruneWriteOpenFailureIsAnError).
		w, err := store.OpenWith(ctx, dbPath, storeOptions(stderr))
		if err != nil {
			return fmt.Errorf("prune: open the store for writing: %w; nothing removed", err)
		}
		if !w.SameFile(db) {
			w.Close()
			return swapped(dbPath, fmt.Errorf("%w: opened for writing as another file", store.ErrReplaced), 0)
		}
		db = w
	}
	var removed int
	for _, c := range todo {
		ok, err := g.pruneGame(ctx, db, c, cut, bound, streams)
		if errors.Is(err, errLateEvent) {
			fmt.Fprintf(stdout, "late   %s: %v\n", c.game, err)
			continue
		}
		if errors.Is(err, store.ErrReplaced) {
			return swapped(dbPath, err, removed)
		}
		if err != nil {
			// What was done by then, for the operator deciding what next
			// (TestPruneRedisGoneMidRunSaysWhatWasDone): this game, left
			// registered or in part, and those after it are for the next run.
			return fmt.Errorf("prune %s: %w; %d games pruned before it; run prune again to finish", c.game, err, removed)
		}
		if !ok {
			fmt.Fprintf(stdout, "kept   %s: an event arrived since the plan\n", c.game)
			continue
		}
		removed++
	}
	fmt.Fprintf(stdout, "pruned %d games\n", removed)
	return nil
}

// pruneGame removes one game; false when the registry says it came back to
// life since the plan. The registry goes last: it is what the plan reads, so
// a run that fails or is stopped before the end (Redis refusing or lost, a
// Ctrl-C) leaves the game registered, and the next run finds it and
// finishes. Taking it out first left the streams of a run that failed at
// their DEL for good: no later plan saw the game (TestPruneStreamsRerunAfterFailure).
//
// Nothing that arrived after the plan is deleted: a store line stored
// since (a seq above bound) keeps the whole game in the store, and a key
// with an entry added since (its mark moved) stays with the keys after
// it; the game is then reported late (errLateEvent) and stays registered.
// One whose keys moved before anything was removed is kept (false).
func (g *global) pruneGame(ctx context.Context, db *store.DB, c pruneCandidate, cut time.Time, bound int64, streams bool) (bool, error) {
	// A game scored after the cut got an event since the plan (or, for a
	// store candidate, since it ended in the store) and is live again.
	// Absent is fine: a store candidate, or another prune took it out.
	live := func() (bool, error) {
		s, err := g.rdb.ZScore(ctx, event.RegistryKey, c.game).Result()
		switch {
		case errors.Is(err, redis.Nil):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("registry: %w", err)
		}
		return s > float64(cut.UnixMilli()), nil
	}
	if l, err := live(); err != nil || l {
		return false, err
	}
	// An entry added to one of its keys since the plan, its registry
	// score not there yet: nothing of the game is removed.
	for _, k := range gameKeys(c.game) {
		if was, ok := c.marks[k]; ok {
			if same, err := g.unchanged(ctx, k, was); err != nil || !same {
				return false, err
			}
		}
	}
	pruneStep(c.game, stepStore)
	var lines int64
	if db != nil {
		n, err := db.DeleteGameUpTo(ctx, c.game, bound)
		if errors.Is(err, store.ErrNewerLines) {
			return true, fmt.Errorf("%w (a line stored since): nothing of it removed, it stays registered", errLateEvent)
		}
		if err != nil {
			return false, err
		}
		lines = n
	}
	pruneStep(c.game, stepStreams)
	var gone []string
	if streams {
		// With the dead positions set: it never expires, and left behind
		// it would keep memory for every game ever pruned. One key at a
		// time, each in a script of its own that deletes it only while
		// nothing was added to it since the plan (keyMarkScript). One
		// command of the three keys is refused with TRYAGAIN while the
		// game's slot migrates (redis-cli --cluster reshard) unless every
		// key is on the node asked, which a game without dead letters
		// never is, and the run stopped there
		// (TestPruneStreamsDuringSlotMigration); a key alone is sent on to
		// its node (ASK). Nothing needs the three gone at once: a run
		// stopped between them is finished by the next.
		// The keys said removed are those the plan found: one missing
		// then (a game whose stream an earlier run deleted) was not
		// (TestPruneFinishesGameLateAtItsDeadLetters).
		for _, k := range gameKeys(c.game) {
			ok, now, err := g.delIfUnchanged(ctx, k, c.marks[k])
			if err != nil {
				return false, fmt.Errorf("delete streams: %w", err)
			}
			if !ok {
				return true, fmt.Errorf("%w (%s: %s, the plan read %s): it stays registered, with %s and the keys after it; %s from before the plan removed",
					errLateEvent, k, untrusted.Escape(now), untrusted.Escape(orNone(c.marks[k])), k, said(lines, gone...))
			}
			if c.marks[k] != "" {
				gone = append(gone, k)
			}
		}
	}
	pruneStep(c.game, stepRegistry)
	if c.registered {
		// Only while its score is still old: a writer that appended since
		// the look above keeps it registered.
		n, err := zremIfOld.Run(ctx, g.rdb, []string{event.RegistryKey}, c.game, cut.UnixMilli()).Int()
		if err != nil {
			return false, fmt.Errorf("registry: %w", err)
		}
		if n == 0 {
			if l, err := live(); err != nil {
				return false, err
			} else if l {
				return true, fmt.Errorf("%w (the registry scores it after the cut): it stays registered; %s from before the plan removed",
					errLateEvent, said(lines, gone...))
			}
		}
	}
	return true, nil
}

// swapped is prune's refusal of a -db that names another file than the
// one its plan read (err wraps store.ErrReplaced), after removed games.
func swapped(dbPath string, err error, removed int) error {
	return fmt.Errorf("prune: -db %s is another file than the plan read (%w): nothing removed from it, %d games pruned before; run prune again to plan on it",
		untrusted.Escape(dbPath), err, removed)
}

// errLateEvent: a game got an event after the plan, found once its removal
// had begun. What arrived since the plan stays; the error says what of the
// game from before it was removed.
var errLateEvent = errors.New("an event arrived since the plan")

// The steps of a game's removal, each after the one before it.
const (
	stepOpen     = "open"     // before the store is opened for writing (game "")
	stepStore    = "store"    // before its store lines are deleted
	stepStreams  = "streams"  // before its streams are deleted
	stepRegistry = "registry" // before it leaves the registry
)

// pruneStepHook, when set, runs before each step of a game's removal. It
// is for the tests, which write an event there, in the moment between the
// plan and a deletion, deterministically.
var pruneStepHook func(game, step string)

// said lists what a late game lost from before the plan: its store lines
// (lines of them) and keys.
func said(lines int64, keys ...string) string {
	var gone []string
	if lines > 0 {
		gone = append(gone, fmt.Sprintf("its %d store lines", lines))
	}
	gone = append(gone, keys...)
	if len(gone) == 0 {
		return "nothing"
	}
	return strings.Join(gone, ", ")
}

// orNone is a key's mark as said: "none" for a key that was missing.
func orNone(mark string) string {
	if mark == "" {
		return "none"
	}
	return mark
}

func pruneStep(game, step string) {
	if pruneStepHook != nil {
		pruneStepHook(game, step)
	}
}
