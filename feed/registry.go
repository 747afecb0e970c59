package feed

import (
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// registryPage is how many registry members one sweep page or one beat
// reply holds.
const registryPage = 500

// beatAhead is how far past the local clock the beat takes registry
// scores: a writer whose clock runs up to that far ahead is still read at
// once (its EVT ids are dead-lettered as "future id" past the renderer's
// -future-bound, 10 min, anyway), while scores further ahead, which every
// beat would list again, are left to the poll and the sweep.
const beatAhead = 10 * time.Minute

// wake is the registry beat (every WakeEvery): the games whose score rose
// above what the loop has seen are due for a read, and new games enter. It
// asks only for the scores written since the last beat, by the local
// clock, less WakeSlack (writers' clocks, a ZADD that lands late), so an
// idle beat is one ZRANGEBYSCORE that returns nothing: its cost follows the
// games that moved, not the size of the registry.
//
// Writers XADD the entry and ZADD GT the score; either may land first. If
// the score comes first, the read finds nothing yet, but the game is hot
// (blocking read) from then on, so the entry is read as soon as it lands.
// If the entry comes first, the beat that sees the score reads it.
func (c *Consumer) wake(now time.Time) error {
	// From the last beat that answered: a loop held up (a long commit, a
	// pause, a backoff) must not skip the scores written meanwhile.
	// Not further back than one sweep period, though: the sweep's pass
	// finds what is older, and a beat after a long outage must not page
	// through every game scored meanwhile under its one timeout.
	from := now.Add(-c.cfg.WakeEvery)
	if !c.lastWake.IsZero() && c.lastWake.Before(from) {
		from = c.lastWake
		if oldest := now.Add(-c.cfg.SweepEvery); from.Before(oldest) {
			from = oldest
		}
	}
	floor := float64(from.Add(-c.cfg.WakeSlack).UnixMilli())
	// Up to beatAhead past the clock, not +inf: a score beyond it (a
	// writer's clock far ahead, a score in microseconds, +inf) would be
	// listed again by every beat until the clock caught up with it, and
	// with thousands of such games every beat paged through all of them
	// (TestBeatCostIgnoresFutureScores). The poll and the sweep read those.
	ceil := float64(now.Add(beatAhead).UnixMilli())
	ctx, cancel := c.callCtx(c.ctx, 5*time.Second)
	defer cancel()
	for offset := int64(0); ; offset += registryPage {
		zs, err := c.rdb.ZRangeByScoreWithScores(ctx, c.cfg.Registry, &redis.ZRangeBy{
			Min: strconv.FormatFloat(floor, 'f', -1, 64), Max: strconv.FormatFloat(ceil, 'f', -1, 64),
			Offset: offset, Count: registryPage,
		}).Result()
		if err != nil {
			c.fail("wake", err)
			c.registryDown(err, now)
			return err
		}
		for _, z := range zs {
			if g, ok := z.Member.(string); ok {
				c.seeGame(g, z.Score, now)
			}
		}
		if len(zs) < registryPage {
			break
		}
	}
	c.ok()
	c.lastWake = now
	c.logFound()
	return nil
}

// sweepNext runs the next sweep page; during the first pass after Open,
// every page at once: every game is new to this process then, so a page
// costs one ZRANGE, and the whole registry is known in one turn.
func (c *Consumer) sweepNext(now time.Time) error {
	for {
		if err := c.sweepPage(now); err != nil {
			return err
		}
		if c.sweep.pass > 1 || c.sweep.page == 0 || c.stopping() {
			return nil
		}
	}
}

// sweepPage lists one page of the registry by score and takes the census
// of its streams: the slow full pass that catches what the beat cannot see
// (pending entries left on quiet streams by a crash before this process
// started, a writer whose clock runs behind, games removed from the
// registry) and removes idle consumers. Passes after the first spread
// their pages over SweepEvery.
//
// Each page starts at the score where the last one ended, past the
// members of that score already listed. By rank, as until 4 Dec 2026, a
// write (ZADD GT moves a game to the end) or a prune between two pages
// shifted the games behind the page's end into the part already swept:
// they went unseen that pass and were forgotten at its end though still
// in the registry (TestSweepSurvivesRegistryMoves). A score only rises,
// so a game is listed at least once a pass; only a game sharing its
// millisecond with one moved or removed meanwhile can still be missed.
func (c *Consumer) sweepPage(now time.Time) error {
	ctx, cancel := c.callCtx(c.ctx, 10*time.Second)
	defer cancel()
	from := "-inf"
	if c.sweep.page > 0 {
		from = strconv.FormatFloat(c.sweep.from, 'f', -1, 64)
	}
	zs, err := c.rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: c.cfg.Registry, ByScore: true,
		Start: from, Stop: "+inf", Offset: c.sweep.skip, Count: registryPage}).Result()
	if err != nil {
		c.fail("sweep", err)
		c.registryDown(err, now)
		return err
	}
	c.ok()
	var page []*streamState
	for _, z := range zs {
		g, _ := z.Member.(string)
		st := c.seeGame(g, z.Score, now)
		if st == nil {
			continue
		}
		st.seenPass = c.sweep.pass
		if st.open && !st.needDoor && !st.inspect && !st.down(now) {
			page = append(page, st)
		}
	}
	if len(page) > 0 {
		if err := c.censusOf(page, c.sweep.pass > 1); err != nil {
			return err
		}
	}
	c.logFound()
	if len(zs) == registryPage {
		last, ties := zs[len(zs)-1].Score, int64(0)
		for i := len(zs) - 1; i >= 0 && zs[i].Score == last; i-- {
			ties++
		}
		if c.sweep.page > 0 && last == c.sweep.from {
			c.sweep.skip += ties // a page within one score: go on past it
		} else {
			c.sweep.from, c.sweep.skip = last, ties
		}
		c.sweep.page++
		c.sweep.next = now.Add(c.sweepGap())
		return nil
	}
	// The pass is over: forget the games that left the registry. A game
	// still being read (hot, due, pending, in a catch-up) is kept until
	// a pass ends with it idle: one missed (see above) must not lose its
	// state, and one really gone is dropped a pass later.
	gone := 0
	for _, st := range c.streams {
		if st.seenPass != c.sweep.pass && !st.hot(now) && !st.due && !st.pending && st.catchLast == "" && len(st.refused) == 0 && !c.keptForAcks(st) {
			c.forget(st)
			gone++
		}
	}
	for key, d := range c.deleted {
		if d.pass != c.sweep.pass {
			delete(c.deleted, key) // left the registry too
		}
	}
	if gone > 0 {
		c.log.Info("games no longer in the registry; forgotten", "count", gone)
		if len(c.streams) == 0 {
			c.note(fmt.Sprintf("all %d streams vanished from the games registry: Redis lost its data (flush, or restart without persistence)?; the store keeps every line", gone))
		}
	}
	c.sweep.pages = c.sweep.page + 1
	c.sweep.page, c.sweep.from, c.sweep.skip = 0, 0, 0
	c.sweep.pass++
	c.sweep.next = now.Add(c.sweepGap())
	return nil
}

// sweepGap is the wait before the next sweep page: none during the first
// pass, then SweepEvery spread over the pages of the last pass.
func (c *Consumer) sweepGap() time.Duration {
	if c.sweep.pass <= 1 {
		return 0
	}
	return c.cfg.SweepEvery / time.Duration(max(1, c.sweep.pages))
}

// logFound reports the games that entered since the last report, in one
// line however many.
func (c *Consumer) logFound() {
	if c.found == 0 {
		return
	}
	c.log.Info("games discovered", "count", c.found, "known", len(c.streams))
	c.found = 0
}
