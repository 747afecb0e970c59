package feed

import "sync/atomic"

// Stats is a snapshot of one Consumer's counters since Open.
type Stats struct {
	Delivered        int64 // entries received with their fields, all paths (malformed ones too)
	Recovered        int64 // of which from the own pending list at start
	Claimed          int64 // entries taken over by XAUTOCLAIM
	Acked            int64 // handler returned nil, XACK confirmed
	Failed           int64 // handler error or panic, left pending
	Panics           int64 // of which panics
	Dead             int64 // dead-lettered, all reasons
	Malformed        int64 // of which malformed entries
	Trimmed          int64 // pending entries found deleted, acked (pending path)
	ClaimDeleted     int64 // deleted ids reported by XAUTOCLAIM (claim path)
	KeptAlive        int64 // idle-time refreshes of entries in hand
	GroupErrors      int64 // XGROUP CREATE failures other than BUSYGROUP
	GroupsCreated    int64 // groups created where none was
	GroupsRecreated  int64 // of which after NOGROUP
	ConsumersDeleted int64 // idle consumers removed
	LoopErrors       int64 // failed loop operations (Redis down, ...)
	Pauses           int64 // times the consumer paused on an Unavailable verdict
	DeadDuplicates   int64 // dead letters not written: one exists for that stream position
	CaughtUp         int64 // entries handed to the handler by catch-up
	Gaps             int64 // streams found trimmed past what the store has
	Polled           int64 // polls of every stream that found entries the registry beat missed

	// The read set now (docs/reader-law.md, "The read set").
	Known   int64 // streams known (the registry's games, or the static list)
	Working int64 // of which with a reason to be read this turn
	Hot     int64 // of which in the blocking read (recently active)
}

type counters struct {
	delivered, recovered, claimed, acked, failed, panics, dead, malformed atomic.Int64
	trimmed, claimDeleted, keptAlive, groupErrors, groupsCreated          atomic.Int64
	groupsRecreated, consumersDeleted, loopErrors                         atomic.Int64
	pauses, deadDuplicates, caughtUp, gaps                                atomic.Int64
	known, working, hot, polled                                           atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Delivered:        c.delivered.Load(),
		Recovered:        c.recovered.Load(),
		Claimed:          c.claimed.Load(),
		Acked:            c.acked.Load(),
		Failed:           c.failed.Load(),
		Panics:           c.panics.Load(),
		Dead:             c.dead.Load(),
		Malformed:        c.malformed.Load(),
		Trimmed:          c.trimmed.Load(),
		ClaimDeleted:     c.claimDeleted.Load(),
		KeptAlive:        c.keptAlive.Load(),
		GroupErrors:      c.groupErrors.Load(),
		GroupsCreated:    c.groupsCreated.Load(),
		GroupsRecreated:  c.groupsRecreated.Load(),
		ConsumersDeleted: c.consumersDeleted.Load(),
		LoopErrors:       c.loopErrors.Load(),
		Pauses:           c.pauses.Load(),
		DeadDuplicates:   c.deadDuplicates.Load(),
		CaughtUp:         c.caughtUp.Load(),
		Gaps:             c.gaps.Load(),
		Polled:           c.polled.Load(),
		Known:            c.known.Load(),
		Working:          c.working.Load(),
		Hot:              c.hot.Load(),
	}
}
