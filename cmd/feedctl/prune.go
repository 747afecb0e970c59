package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
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
