package web

import (
	"context"
	"sync"
	"time"
)

// Presence shares this replica's viewer counts with the other replicas
// (internal/presence implements it over Redis). One viewer is one open
// websocket: a player with the game open in three tabs counts three times.
type Presence interface {
	// Sync publishes local (open websockets per game on this replica) and
	// returns the counts of every other live replica, summed per game.
	Sync(ctx context.Context, local map[string]int) (map[string]int, error)
	// Leave withdraws this replica's counts (on a clean shutdown).
	Leave(ctx context.Context) error
}

// frameWatching carries a game's viewer count: {"t":"watching","n":N}.
const frameWatching = "watching"

// watchers is the replica's view of who is watching: its own sockets
// (exact, at once) plus the other replicas' counts from the last Sync.
type watchers struct {
	kick chan struct{} // one slot: a local count changed

	mu     sync.Mutex
	others map[string]int
	sent   map[string]int // count last broadcast per game with a hub
}

func newWatchers() *watchers {
	return &watchers{kick: make(chan struct{}, 1), others: map[string]int{}, sent: map[string]int{}}
}

// local returns the open websockets per game of this replica.
func (hs *hubs) counts() map[string]int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	out := make(map[string]int, len(hs.m))
	for g, h := range hs.m {
		h.mu.Lock()
		out[g] = len(h.clients)
		h.mu.Unlock()
	}
	return out
}

// Watching returns the viewers of every watched game, over all replicas.
func (s *Server) Watching() map[string]int {
	local := s.hubs.counts()
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	for g, n := range s.watch.others {
		local[g] += n
	}
	return local
}

// watchingOf returns game's viewers over all replicas.
func (s *Server) watchingOf(game string) int {
	n := 0
	if h := s.hubs.get(game); h != nil {
		h.mu.Lock()
		n = len(h.clients)
		h.mu.Unlock()
	}
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return n + s.watch.others[game]
}

func watchingFrame(n int) frame {
	return frame{typ: frameWatching, data: encode(wireFrame{T: frameWatching, N: int64(n)})}
}

// joined gives a new socket its game's count at once (queued ahead of the
// backfill's end, written after it) and asks the loop to share the change.
// Peers' sockets hear of it on the loop's next beat: a burst of joins costs
// one frame per socket per beat, not one per join. When the count told
// differs from the one last broadcast, that one is forgotten, so the next
// beat sends its count even if it is back to the last broadcast (another
// socket left before that beat), or the joiner would keep the count of
// its join.
func (s *Server) joined(c *client, game string) {
	n := s.watchingOf(game)
	c.offer(watchingFrame(n))
	s.watch.mu.Lock()
	if s.watch.sent[game] != n {
		delete(s.watch.sent, game)
	}
	s.watch.mu.Unlock()
	s.changed()
}

func (s *Server) changed() {
	select {
	case s.watch.kick <- struct{}{}:
	default:
	}
}

// PresenceMinGap spaces the presence beats, also those a burst of joins and
// leaves triggers: beats are at least this far apart whatever
// Config.PresenceEvery says.
const PresenceMinGap = 250 * time.Millisecond

// runPresence syncs with the other replicas every PresenceEvery and soon
// after a local change, then sends each watched game's count to its sockets
// when it moved. Without a Presence it counts this replica alone.
func (s *Server) runPresence(ctx context.Context) {
	tick := time.NewTicker(s.cfg.PresenceEvery)
	defer tick.Stop()
	failures := 0
	synced := time.Now() // the last sync that succeeded
	for {
		select {
		case <-ctx.Done():
			s.leave()
			return
		case <-tick.C:
		case <-s.watch.kick:
		}
		if p := s.cfg.Presence; p != nil {
			// At least a few seconds: a beat as short as a test's 200ms
			// would fail every sync on a loaded machine, and a late count
			// is better than none (ticks missed meanwhile are dropped).
			sctx, cancel := context.WithTimeout(ctx, max(s.cfg.PresenceEvery, 3*time.Second))
			others, err := p.Sync(sctx, s.hubs.counts())
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					s.leave()
					return
				}
				// Peers' counts stay while they could still be live in
				// Redis; after the TTL they are dropped, or a dead replica's
				// viewers would be shown for as long as Redis is away. This
				// replica's sockets are counted exactly either way.
				failures++
				s.log.Warn("web: presence sync", "attempts", failures, "err", err)
				if time.Since(synced) > s.cfg.PresenceTTL {
					s.watch.mu.Lock()
					s.watch.others = nil
					s.watch.mu.Unlock()
				}
			} else {
				failures = 0
				synced = time.Now()
				s.watch.mu.Lock()
				s.watch.others = others
				s.watch.mu.Unlock()
			}
		}
		s.broadcastWatching()
		select {
		case <-ctx.Done():
			s.leave()
			return
		case <-time.After(PresenceMinGap):
		}
	}
}

// broadcastWatching sends every watched game's count to its sockets when it
// differs from the one last sent.
func (s *Server) broadcastWatching() {
	all := s.Watching()
	s.watch.mu.Lock()
	for g := range s.watch.sent {
		if s.hubs.get(g) == nil {
			delete(s.watch.sent, g)
		}
	}
	var changed []string
	for g, n := range all {
		if s.watch.sent[g] != n {
			s.watch.sent[g] = n
			changed = append(changed, g)
		}
	}
	s.watch.mu.Unlock()
	for _, g := range changed {
		if h := s.hubs.get(g); h != nil {
			s.countEncoded(frameWatching)
			s.countSlow(h.broadcast(watchingFrame(all[g])))
		}
	}
}

func (s *Server) leave() {
	if s.cfg.Presence == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.cfg.Presence.Leave(ctx); err != nil {
		s.log.Info("web: presence leave", "err", err)
	}
}
