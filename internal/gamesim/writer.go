package gamesim

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/backoff"
	"github.com/codemojex/feed/internal/event"
)

const (
	// maxBatch caps the entries of one pipeline: big enough for 100,000
	// entries in a few seconds, small enough to keep a retry cheap.
	maxBatch = 1000
	// settleTimeout is how long Run keeps retrying the batch in hand after
	// its context ended, so that its Summary stays exact.
	settleTimeout = 15 * time.Second
	// attemptTimeout bounds one pipeline round trip.
	attemptTimeout = 10 * time.Second
	backoffMin     = 20 * time.Millisecond
	backoffMax     = 2 * time.Second
)

// gameState is one game being written.
type gameState struct {
	sum  GameSummary
	gen  *Game
	rng  *rand.Rand // decides which entries are malformed, apart from gen
	n    int        // entries built so far
	last position   // last position handed out
}

// next returns the position of an entry written at ms: the stream's clock,
// like the writer's, never goes back.
func (g *gameState) next(ms uint64) position {
	if ms > g.last.ms {
		g.last = position{ms: ms}
	} else {
		g.last.seq++
	}
	return g.last
}

// entry is one entry built and waiting to be confirmed.
type entry struct {
	g      *gameState
	pos    string
	id     string // "" when the entry carries no valid id
	at     time.Time
	values []string
	reason string // malformed: why
	unk    bool
}

type writer struct {
	rdb      redis.UniversalClient
	cfg      Config
	out      io.Writer
	minter   *event.Minter
	games    []*gameState
	turn     int
	start    time.Time
	built    int64
	stopped  bool
	lastTick time.Time
	lastN    int64
}

func newWriter(rdb redis.UniversalClient, cfg Config, out io.Writer) *writer {
	w := &writer{rdb: rdb, cfg: cfg, out: out, minter: event.NewMinter(cfg.Seed)}
	for i := 1; i <= cfg.Games; i++ {
		name := GameName(cfg.Prefix, i)
		seed := GameSeed(cfg.Seed, i)
		w.games = append(w.games, &gameState{
			sum: GameSummary{Game: name, Stream: event.StreamKey(name), Reasons: map[string]int64{}},
			gen: NewGame(name, seed),
			rng: rand.New(rand.NewSource(seed ^ 0x5bd1e995)),
		})
	}
	return w
}

func (w *writer) loop(ctx context.Context) error {
	w.start = time.Now()
	w.lastTick = w.start
	for {
		if ctx.Err() != nil {
			w.stopped = w.remaining() != 0
			return nil
		}
		if w.remaining() == 0 {
			return nil
		}
		n := w.due(ctx)
		if n == 0 {
			continue // cancelled while waiting
		}
		batch := w.build(n)
		if err := w.flush(ctx, batch); err != nil {
			w.stopped = true
			return err
		}
		w.tick()
	}
}

// remaining returns how many entries are still to build, or -1 when the
// run is endless.
func (w *writer) remaining() int64 {
	if w.cfg.Events == 0 {
		return -1
	}
	return int64(w.cfg.Events)*int64(len(w.games)) - w.built
}

// due waits until at least one entry is due under the rate and returns how
// many are (at most maxBatch and what remains); 0 when done or cancelled.
func (w *writer) due(ctx context.Context) int {
	left := w.remaining()
	if left == 0 {
		return 0
	}
	n := int64(maxBatch)
	if w.cfg.Rate > 0 {
		at := w.start.Add(time.Duration(float64(w.built) / w.cfg.Rate * float64(time.Second)))
		if d := time.Until(at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return 0
			case <-t.C:
			}
		}
		n = int64(time.Since(w.start).Seconds()*w.cfg.Rate) + 1 - w.built
		n = max(1, min(n, maxBatch))
	}
	if left > 0 {
		n = min(n, left)
	}
	return int(n)
}

// build makes the next n entries, taking the games in turn.
func (w *writer) build(n int) []*entry {
	batch := make([]*entry, 0, n)
	for range n {
		var g *gameState
		for {
			g = w.games[w.turn%len(w.games)]
			w.turn++
			if w.cfg.Events == 0 || g.n < w.cfg.Events {
				break
			}
		}
		g.n++
		w.built++
		now := time.Now()
		e := &entry{g: g, at: now, id: w.minter.Next(now)}
		e.pos = g.next(uint64(now.UnixMilli())).String()
		switch roll := g.rng.Float64(); {
		case roll < w.cfg.Bad:
			e.values, e.reason = malformed(g.rng, e.id, now)
			if e.reason == BadMissingID || e.reason == BadInvalidID {
				e.id = ""
			}
		case roll < w.cfg.Bad+w.cfg.Unknown:
			e.values, e.unk = unknown(g.rng, e.id, now), true
		default:
			e.values = g.gen.Next().Entry(e.id, now)
		}
		batch = append(batch, e)
	}
	return batch
}

// flush writes batch and keeps the registry current, retrying with capped,
// jittered backoff until Redis confirmed every entry; after ctx ends it
// goes on for settleTimeout, then gives up with ErrUnsettled.
func (w *writer) flush(ctx context.Context, batch []*entry) error {
	latest := map[*gameState]time.Time{}
	for _, e := range batch {
		latest[e.g] = e.at
	}
	todo := batch
	var giveUp time.Time
	retry := backoff.Backoff{Min: backoffMin, Max: backoffMax}
	for {
		var err error
		if todo, err = w.send(context.WithoutCancel(ctx), todo, latest); err == nil {
			return nil
		}
		if ctx.Err() != nil && giveUp.IsZero() {
			giveUp = time.Now().Add(settleTimeout)
		}
		if !giveUp.IsZero() && time.Now().After(giveUp) {
			return fmt.Errorf("%w: %d entries: %w", ErrUnsettled, len(todo), err)
		}
		wait := retry.Next()
		fmt.Fprintf(w.out, "gamesim: redis: %v (retrying %d entries in %v)\n", err, len(todo), wait.Round(time.Millisecond))
		time.Sleep(wait)
		// The batch's games are scored anew: a retried entry's ZADD may
		// have gone through when its XADD did not (another master, on a
		// cluster), and renderers look at a quiet game when its score
		// moves. With the old score the entry, once written, waited for
		// their poll. So did entries written when their ZADD was refused
		// (the registry's master down): it landed late with a score older
		// than the renderers' beat looks at (TestRefusedZaddScoresAnew).
		now := time.Now()
		for g, at := range latest {
			if now.After(at) {
				latest[g] = now
			}
		}
	}
}

// send pipelines todo's XADDs and the registry's ZADDs once and returns the
// entries Redis did not confirm, in order. An entry refused because its
// position is not above the stream's top was written by an earlier attempt
// whose answer got lost: positions are ours and only grow.
func (w *writer) send(ctx context.Context, todo []*entry, latest map[*gameState]time.Time) ([]*entry, error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	pipe := w.rdb.Pipeline()
	xadds := make([]*redis.StringCmd, len(todo))
	for i, e := range todo {
		xadds[i] = pipe.XAdd(ctx, &redis.XAddArgs{
			Stream: e.g.sum.Stream, ID: e.pos, Values: e.values,
			MaxLen: w.cfg.MaxLen, Approx: w.cfg.MaxLen > 0,
		})
	}
	var zadds []*redis.IntCmd
	for _, g := range w.games { // game order: deterministic pipelines
		if at, ok := latest[g]; ok {
			zadds = append(zadds, pipe.ZAddGT(ctx, event.RegistryKey, redis.Z{Score: float64(at.UnixMilli()), Member: g.sum.Game}))
		}
	}
	_, _ = pipe.Exec(ctx) // each command's error is looked at below
	var rest []*entry
	var firstErr error
	for i, e := range todo {
		err := xadds[i].Err()
		if alreadyWritten(err) {
			// Ours from an attempt whose answer got lost, or another
			// writer's (a feedctl dead requeue's XADD *) that took the
			// position: look before counting it.
			var ours bool
			if ours, err = w.holds(ctx, e); err == nil && !ours {
				if err = w.reposition(ctx, e); err == nil {
					err = fmt.Errorf("position taken by another writer; moved to %s", e.pos)
				}
			}
		}
		if err != nil {
			rest = append(rest, e)
			firstErr = firstOf(firstErr, fmt.Errorf("xadd %s: %w", e.g.sum.Stream, err))
			continue
		}
		w.confirm(e)
	}
	for _, z := range zadds {
		if err := z.Err(); err != nil {
			firstErr = firstOf(firstErr, fmt.Errorf("zadd %s: %w", event.RegistryKey, err))
		}
	}
	return rest, firstErr
}

func firstOf(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// confirm counts an entry Redis holds.
func (w *writer) confirm(e *entry) {
	s := &e.g.sum
	switch {
	case e.reason != "":
		s.Bad++
		s.Reasons[e.reason]++
		s.BadPositions = append(s.BadPositions, e.pos)
	default:
		s.Good++
		if e.unk {
			s.Unknown++
		}
	}
	if e.id != "" {
		if s.FirstID == "" {
			s.FirstID = e.id
		}
		s.LastID = e.id
	}
	s.LastPos, s.LastAt = e.pos, e.at
}

func (w *writer) summary() Summary {
	s := Summary{Stopped: w.stopped}
	if !w.start.IsZero() {
		s.Elapsed = time.Since(w.start)
	}
	for _, g := range w.games {
		gs := g.sum
		gs.Reasons = make(map[string]int64, len(g.sum.Reasons))
		for k, v := range g.sum.Reasons {
			gs.Reasons[k] = v
		}
		gs.BadPositions = append([]string(nil), g.sum.BadPositions...)
		s.Games = append(s.Games, gs)
		s.Good += gs.Good
		s.Bad += gs.Bad
		s.Unknown += gs.Unknown
	}
	return s
}

// tick prints a progress line about once a second, or every ten seconds
// at a human pace, where a line a second would drown the other logs.
func (w *writer) tick() {
	now := time.Now()
	every := time.Second
	if w.cfg.Rate > 0 && w.cfg.Rate < 100 {
		every = 10 * time.Second
	}
	if now.Sub(w.lastTick) < every {
		return
	}
	var n, bad int64
	for _, g := range w.games {
		n += g.sum.Written()
		bad += g.sum.Bad
	}
	rate := float64(n-w.lastN) / now.Sub(w.lastTick).Seconds()
	fmt.Fprintf(w.out, "gamesim: %d entries written (%d malformed), %.0f/s\n", n, bad, rate)
	w.lastTick, w.lastN = now, n
}

// report prints the final per-game counts. The last line is a contract:
// tests of the binary parse "gamesim: done: N entries (G good, B malformed)".
func (w *writer) report(s Summary) {
	for _, g := range s.Games {
		fmt.Fprintf(w.out, "gamesim: %s: good=%d bad=%d unknown=%d last=%s\n", g.Game, g.Good, g.Bad, g.Unknown, g.LastID)
	}
	state := "done"
	if s.Stopped {
		state = "stopped"
	}
	fmt.Fprintf(w.out, "gamesim: %s: %d entries (%d good, %d malformed) over %d games in %v\n",
		state, s.Written(), s.Good, s.Bad, len(s.Games), s.Elapsed.Round(time.Millisecond))
}
