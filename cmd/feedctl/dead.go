package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/backoff"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/flagenv"
	"github.com/codemojex/feed/internal/pipeline"
	"github.com/codemojex/feed/internal/untrusted"
)

// setFlags collects repeated -set field=value flags.
type setFlags map[string]string

// String is the fields as they are typed, field=value in field order (a
// value with a space, a quote or nothing in it quoted): "requeued … with
// exact=1 near=0", where Go's map syntax printed map[exact:1 near:0].
func (s setFlags) String() string {
	parts := make([]string, 0, len(s))
	for _, k := range slices.Sorted(maps.Keys(s)) {
		v := s[k]
		if v == "" || strings.ContainsAny(v, " \t\"'") {
			v = strconv.Quote(v)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

func (s setFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want field=value, got %q", v)
	}
	if strings.HasPrefix(k, "dead_") {
		return fmt.Errorf("field %q is the dead letter's own", k)
	}
	s[k] = val
	return nil
}

// deadCmd is one dead requeue or dead drop.
type deadCmd struct {
	care
	sub, game, id string
	all, force    bool
	set           setFlags
	futureBound   time.Duration
}

func (g *global) dead(ctx context.Context, args []string, t terminal, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("dead: want list, requeue or drop")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		// Asked as of every other command, and answered as the flag
		// package answers them: it was refused as an unknown subcommand
		// (TestDeadHelp).
		writeUsage(t.out)
		return flag.ErrHelp
	}
	c := deadCmd{sub: args[0], set: setFlags{}, futureBound: g.futureBound}
	args = args[1:]
	var limit int64
	fs := flagenv.New("dead " + c.sub)
	fs.SetOutput(t.out)
	fs.StringVar(&c.game, "game", "", "game")
	switch c.sub {
	case "list":
		fs.Int64Var(&limit, "n", 100, "how many, oldest first (0: all)")
	case "requeue", "drop":
		fs.StringVar(&c.id, "id", "", "dead letter id (its position in the dead-letter stream)")
		fs.BoolVar(&c.all, "all", false, "every dead letter of the game")
		c.care.flags(fs)
		if c.sub == "requeue" {
			fs.Var(c.set, "set", "field=value to fix before requeueing (repeatable; needs -id)")
			fs.BoolVar(&c.force, "force", false, "requeue entries that the renderer would dead-letter again")
		}
	default:
		return fmt.Errorf("dead: unknown subcommand %q: want list, requeue or drop", c.sub)
	}
	if err := gameArg(fs, args, &c.game); err != nil {
		return err
	}
	if c.sub == "list" {
		// A negative count read as "all" as 0 does, where status -recent
		// refuses what it cannot mean.
		if limit < 0 {
			return fmt.Errorf("dead list: -n %d: want 0 (all) or more", limit)
		}
		if err := g.open(ctx); err != nil {
			return err
		}
		defer g.rdb.Close()
		ds, err := feed.ListDead(ctx, g.rdb, event.DeadKey(c.game), limit)
		if err != nil {
			return err
		}
		total := int64(len(ds))
		if limit > 0 && total == limit {
			// There may be more than it shows: say how many.
			if total, err = g.rdb.XLen(ctx, event.DeadKey(c.game)).Result(); err != nil {
				return fmt.Errorf("dead list: %w", err)
			}
		}
		writeDead(stdout, ds, total)
		return nil
	}
	if (c.id == "") == !c.all {
		return fmt.Errorf("dead %s: give exactly one of -id and -all", c.sub)
	}
	if len(c.set) > 0 && c.all {
		return fmt.Errorf("dead requeue: -set needs -id")
	}
	if err := g.open(ctx); err != nil {
		return err
	}
	defer g.rdb.Close()
	ds, err := c.letters(ctx, g.rdb)
	if err != nil {
		return err
	}
	if len(ds) == 0 {
		// -all of a game with none (a mistyped -game, say): nothing to
		// confirm, and say so.
		fmt.Fprintf(stdout, "no dead letters of %s: nothing to %s\n", c.game, c.sub)
		return nil
	}
	if c.sub == "drop" {
		return c.drop(ctx, g.rdb, ds, t, stdout)
	}
	return c.requeue(ctx, g.rdb, ds, t, stdout)
}

// letters returns the dead letters the command is about: the one of -id,
// or every one of the game.
func (c *deadCmd) letters(ctx context.Context, rdb redis.UniversalClient) ([]feed.DeadLetter, error) {
	all, err := feed.ListDead(ctx, rdb, event.DeadKey(c.game), 0)
	if err != nil || c.all {
		return all, err
	}
	for _, d := range all {
		if d.DeadID == c.id {
			return []feed.DeadLetter{d}, nil
		}
	}
	return nil, fmt.Errorf("%w: %s %s", feed.ErrDeadNotFound, event.DeadKey(c.game), untrusted.Escape(c.id))
}

func (c *deadCmd) drop(ctx context.Context, rdb redis.UniversalClient, ds []feed.DeadLetter, t terminal, stdout io.Writer) error {
	if c.dryRun {
		for _, d := range ds {
			fmt.Fprintf(stdout, "would drop %s (%s %s)\n", untrusted.Escape(d.DeadID), orDash(d.EvtID), orDash(d.Fields[event.FieldKind]))
		}
		fmt.Fprintf(stdout, "dry run: %d dead letters of %s would be dropped\n", len(ds), c.game)
		return nil
	}
	if err := c.confirm(t, fmt.Sprintf("drop %d dead letters of %s for good", len(ds), c.game)); err != nil {
		return err
	}
	for _, d := range ds {
		if err := feed.DropDead(ctx, rdb, event.DeadKey(c.game), d.DeadID); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "dropped %s\n", untrusted.Escape(d.DeadID))
	}
	return nil
}

// requeue puts dead letters back on the stream, but only those the
// renderer would now take: each is decoded and validated as the consumer
// and the pipeline do (with -set applied), and one that would be
// dead-lettered again is refused unless -force.
func (c *deadCmd) requeue(ctx context.Context, rdb redis.UniversalClient, ds []feed.DeadLetter, t terminal, stdout io.Writer) error {
	stream := event.StreamKey(c.game)
	var ok []feed.DeadLetter
	refused, truncated := 0, 0
	for _, d := range ds {
		if d.Truncated != "" || d.Dropped != "" {
			// The requeue script refuses it, -force or not.
			truncated++
			fmt.Fprintf(stdout, "refused %s: truncated: the original cannot be requeued\n", untrusted.Escape(d.DeadID))
			continue
		}
		if err := wouldFail(stream, d, c.set, c.futureBound); err != nil {
			if !c.force {
				refused++
				fmt.Fprintf(stdout, "refused %s: would fail again: %s\n", untrusted.Escape(d.DeadID), untrusted.Text(err.Error()))
				continue
			}
			fmt.Fprintf(stdout, "forced %s: will fail again: %s\n", untrusted.Escape(d.DeadID), untrusted.Text(err.Error()))
		}
		ok = append(ok, d)
	}
	var errs []error
	if refused > 0 {
		errs = append(errs, fmt.Errorf("dead requeue: %d of %d dead letters would fail again: fix them with -set field=value, or pass -force", refused, len(ds)))
	}
	if truncated > 0 {
		errs = append(errs, fmt.Errorf("dead requeue: %d of %d dead letters are truncated: their originals cannot be requeued (drop them)", truncated, len(ds)))
	}
	err := errors.Join(errs...)
	if c.dryRun {
		for _, d := range ok {
			fmt.Fprintf(stdout, "would requeue %s (%s)\n", untrusted.Escape(d.DeadID), orDash(d.EvtID))
		}
		fmt.Fprintf(stdout, "dry run: %d of %d dead letters of %s would be requeued\n", len(ok), len(ds), c.game)
		return err
	}
	if len(ok) == 0 {
		return err
	}
	if c.all {
		if cerr := c.confirm(t, fmt.Sprintf("requeue %d dead letters of %s", len(ok), c.game)); cerr != nil {
			return errors.Join(cerr, err)
		}
	}
	for _, d := range ok {
		pos, rerr := requeueRetrying(ctx, rdb, stream, event.DeadKey(c.game), d, c.set, stdout)
		if rerr != nil {
			return errors.Join(rerr, err)
		}
		if rerr := c.wake(ctx, rdb); rerr != nil {
			return errors.Join(fmt.Errorf("dead requeue: %s requeued as %s, but the renderers may not see it before their poll: %w",
				untrusted.Escape(d.DeadID), pos, rerr), err)
		}
		if len(c.set) > 0 {
			fmt.Fprintf(stdout, "requeued %s with %s as %s\n", untrusted.Escape(d.DeadID), untrusted.Escape(c.set.String()), pos)
			continue
		}
		fmt.Fprintf(stdout, "requeued %s as %s\n", untrusted.Escape(d.DeadID), pos)
	}
	return err
}

// Retries of a requeue refused with TRYAGAIN: the project's backoff from
// 100 ms to 1 s, for at most requeueRetryFor in all.
const (
	requeueRetryFirst = 100 * time.Millisecond
	requeueRetryMax   = time.Second
	requeueRetryFor   = 30 * time.Second
)

// requeueRetrying is feed.RequeueDeadFixed, retried while Redis refuses it
// with TRYAGAIN. The requeue is one script over the game's stream and dead
// stream, and while a migration of the game's slot (redis-cli --cluster
// reshard) has moved one of them to the importing master and not the
// other, Redis refuses it: go-redis's own three retries, about 100 ms,
// end before a MIGRATE batch of another game's keys does, and the run
// stopped at that letter ("TRYAGAIN Multiple keys request during rehashing
// of slot"; TestRequeueDuringSlotMigration). It is retried with a backoff
// for up to requeueRetryFor, saying so once on stdout; the script stays
// one, so a letter is never requeued twice nor lost between its XADD and
// its XDEL.
func requeueRetrying(ctx context.Context, rdb redis.UniversalClient, stream, deadKey string, d feed.DeadLetter, fix map[string]string, stdout io.Writer) (string, error) {
	bo := backoff.Backoff{Min: requeueRetryFirst, Max: requeueRetryMax}
	deadline, said := time.Now().Add(requeueRetryFor), false
	for {
		pos, err := feed.RequeueDeadFixed(ctx, rdb, stream, deadKey, d.DeadID, fix)
		wait := bo.Next()
		if err == nil || !isTryAgain(err) || time.Now().Add(wait).After(deadline) {
			if err != nil && isTryAgain(err) {
				err = fmt.Errorf("dead requeue: the slot of %s still migrating after %v of retries: %w", stream, requeueRetryFor, err)
			}
			return pos, err
		}
		if !said {
			said = true
			fmt.Fprintf(stdout, "requeue of %s waits: the game's slot is migrating (TRYAGAIN); retrying for up to %v\n",
				untrusted.Escape(d.DeadID), requeueRetryFor)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

// isTryAgain reports a TRYAGAIN reply: a command over several keys of a
// slot whose keys a migration has split between two masters.
func isTryAgain(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "TRYAGAIN")
}

// wake moves the game's registry score to now, as a writer does after its
// XADD (docs/contracts.md, "Keys"): a requeue appends to the stream, and
// renderers read a quiet game when its score moves. Without it the entry
// waited for their poll (a round over every game: 100 s at 100,000 games),
// and for good once the game had left the registry (feedctl prune).
func (c *deadCmd) wake(ctx context.Context, rdb redis.UniversalClient) error {
	return wakeGame(ctx, rdb, c.game)
}

// wakeGame moves a game's registry score to now (ZADD GT), as a writer
// does after its XADD, putting the game back in the registry if it left
// it: what feedctl makes readable again (a requeue, a replay) is then read
// at the renderers' next beat.
func wakeGame(ctx context.Context, rdb redis.UniversalClient, game string) error {
	z := redis.Z{Score: float64(time.Now().UnixMilli()), Member: game}
	if err := rdb.ZAddGT(ctx, event.RegistryKey, z).Err(); err != nil {
		return fmt.Errorf("games registry: %w", err)
	}
	return nil
}

// wouldFail runs a dead letter, as it would go back on stream with fix
// applied, through the renderer's own decoder and validation (feed.Decode,
// then the pipeline's check and render), and returns why it would be
// dead-lettered again, or nil.
func wouldFail(stream string, d feed.DeadLetter, fix map[string]string, futureBound time.Duration) error {
	vals := make(map[string]any, len(d.Fields)+len(fix))
	for k, v := range d.Fields {
		vals[k] = v
	}
	for k, v := range fix {
		vals[k] = v
	}
	// A requeued entry goes back at a new position, stamped by Redis's
	// clock now: that is the time the future-id bound is measured from.
	pos := strconv.FormatInt(time.Now().UnixMilli(), 10) + "-0"
	m, err := feed.Decode(stream, redis.XMessage{ID: pos, Values: vals})
	if err != nil {
		return err
	}
	_, err = (&pipeline.Pipeline{Renderer: "feedctl", MaxAhead: futureBound}).Event(m)
	return err
}

// writeDead prints dead letters as a table, and how many: "N dead
// letters", or "N of TOTAL dead letters" when the game has more than it
// shows.
func writeDead(w io.Writer, ds []feed.DeadLetter, total int64) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEAD ID\tEVT ID\tKIND\tATTEMPTS\tCONSUMER\tSTREAM ID\tAT\tREASON")
	for _, d := range ds {
		reason := untrusted.Text(d.Reason)
		if d.Truncated != "" || d.Dropped != "" {
			// Not the whole entry: it cannot be requeued.
			reason += " [truncated: not requeueable]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", untrusted.Escape(d.DeadID), orDash(d.EvtID),
			orDash(d.Fields[event.FieldKind]), d.Attempts, orDash(d.Consumer), untrusted.Escape(d.StreamID),
			d.At.Format(time.RFC3339), reason)
	}
	tw.Flush()
	if total > int64(len(ds)) {
		fmt.Fprintf(w, "%d of %d dead letters, the oldest (-n 0: all)\n", len(ds), total)
		return
	}
	fmt.Fprintf(w, "%d dead letters\n", len(ds))
}

// orDash is a field from Redis fit to print: control characters escaped
// (an entry's kind may hold ESC sequences that would drive the terminal),
// "-" for empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return untrusted.Escape(s)
}
