package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemojex/feed/internal/logsample"
	"github.com/codemojex/feed/store"
)

// Errors of the web package.
var (
	// ErrNoStore is returned by Open when Config.Store is nil.
	ErrNoStore = errors.New("web: config has no store")
	// ErrAdminExposed is returned by Open when the listener is not on a
	// loopback address and no AdminToken is set: the operator endpoints
	// would be open to whoever reaches the address.
	ErrAdminExposed = errors.New("web: listening beyond loopback without an admin token")

	errNoStatus   = errors.New("web: no status source configured")
	errReset      = errors.New("web: client reset")          // a reset frame ended the socket
	errWriteStuck = errors.New("web: websocket write stuck") // std engine: no progress for WriteTimeout
	// errReadyPanicked is the readiness result left by a Config.Ready that
	// panicked.
	errReadyPanicked = errors.New("web: readiness check panicked")
)

// Store is what the web reads from the store; *store.DB implements it.
type Store interface {
	// Page returns the latest n lines of game (newest first), the store's
	// max seq and the scoreboard, read in one transaction.
	Page(ctx context.Context, game string, n int) (store.Page, error)
	// Before returns up to n lines of game older than evtID, newest first.
	Before(ctx context.Context, game, evtID string, n int) ([]store.Line, error)
	// After returns up to limit lines of game with seq > seq, in seq order.
	After(ctx context.Context, game string, seq int64, limit int) ([]store.Line, error)
	// CountAfter returns how many lines of game have seq > seq, counting
	// no further than limit.
	CountAfter(ctx context.Context, game string, seq int64, limit int) (int, error)
	// Since returns up to limit lines of every game with seq > seq, in seq order.
	Since(ctx context.Context, seq int64, limit int) ([]store.Line, error)
	// MaxSeq returns the highest seq in the store (0 when empty).
	MaxSeq(ctx context.Context) (int64, error)
	// HighSeq returns the highest seq ever given to a line, which a
	// deletion of the newest lines does not lower.
	HighSeq(ctx context.Context) (int64, error)
	// LastAt returns the EVT id of game's line with the greatest seq at or
	// below seq, and false when there is none.
	LastAt(ctx context.Context, game string, seq int64) (string, bool, error)
	// ScoreboardAt returns game's state for the scoreboard panel,
	// reflecting at least every line up to seq.
	ScoreboardAt(ctx context.Context, game string, seq int64) (store.Scoreboard, error)
	// Game returns game's summary, or an error wrapping store.ErrNotFound.
	Game(ctx context.Context, game string) (store.Game, error)
	// RecentGames returns the n most recently active games' summaries,
	// most recent first, and how many games there are in all.
	RecentGames(ctx context.Context, n int) ([]store.Game, int, error)
	// TimelineAfter returns up to n lines of game with an EVT id above
	// after, in EVT id order (oldest first).
	TimelineAfter(ctx context.Context, game, after string, n int) ([]store.Line, error)
}

var _ Store = (*store.DB)(nil)

// Server is a running web server with its tailer and hubs.
type Server struct {
	cfg  Config
	log  *slog.Logger
	ln   net.Listener
	http *http.Server

	// ctx ends live work (tailer, websockets) on Close; HTTP requests drain
	// through http.Server.Shutdown instead.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // tailer, serve loop, websocket handlers

	hubs     *hubs
	handoff  *handoff
	tail     *tailer
	watch    *watchers
	recent   recentGames // the index's games, shared by its requests
	limiter  *limiter
	sockets  *slots        // websockets per client key, taken before the handshake
	requests *slots        // plain requests in flight per client key
	ready    *readiness    // /readyz's shared checks; nil without Config.Ready
	reserved atomic.Int64  // websockets admitted (MaxClients), from before the handshake to close
	hosts    []hostPattern // PublicHosts
	poll     *poller       // the nbio engine's sockets; nil on the std engine
	loopback bool          // the listener is on a loopback address
	stats    counters
	sampled  *logsample.Sampler // refusals a client can repeat at will
	ping     []byte             // an event stream's ping event (pingEvent)

	draining atomic.Bool // Drain was called: /readyz answers 503

	mu      sync.Mutex
	closing bool // no new websocket handlers once set (guards wg.Add)

	closeOnce sync.Once
	closeErr  error
}

// Stats are this Server's own counters (the Prometheus collectors are
// process-wide, shared by every Server in a process).
type Stats struct {
	Clients       int64 `json:"clients"`        // open websockets
	EventStreams  int64 `json:"event_streams"`  // open event streams (the fallback for websockets, events.go)
	Requests      int64 `json:"requests"`       // plain requests in flight
	Conns         int64 `json:"conns"`          // HTTP connections open (a websocket leaves this count at its handshake)
	Hubs          int64 `json:"hubs"`           // games with at least one websocket
	LinesEncoded  int64 `json:"lines_encoded"`  // line frames the tailer encoded (once per line per watched game, shared by its clients)
	StatesEncoded int64 `json:"states_encoded"` // state frames the tailer encoded: whole scoreboard panels (see boards.go)
	BoardsEncoded int64 `json:"boards_encoded"` // board frames the tailer encoded: panels with unchanged rows stubbed
	FramesSent    int64 `json:"frames_sent"`    // frames written to websockets
	SlowCloses    int64 `json:"slow_closes"`    // websockets closed for not keeping up
	PongTimeouts  int64 `json:"pong_timeouts"`  // websockets dropped as gone: a ping unanswered while nothing written reached the peer
	Resets        int64 `json:"resets"`         // reset frames sent
	TailCursor    int64 `json:"tail_cursor"`    // highest seq handed to the hubs
	TailErrors    int64 `json:"tail_errors"`    // failed store reads of the tailer
	// HandoffHits counts batches of Committed lines handed to the hubs
	// without a store read; HandoffMisses those that needed one (their
	// seqs did not follow the tailer's cursor).
	HandoffHits   int64 `json:"handoff_hits"`
	HandoffMisses int64 `json:"handoff_misses"`
	// StatesSkipped counts scoreboard frames not sent because the hub's
	// clients showed that panel already.
	StatesSkipped int64 `json:"states_skipped"`
	// FramesDeflated counts frames compressed for permessage-deflate
	// sockets: once per frame, however many sockets it goes to.
	// DeflatePlainBytes and DeflatedBytes are those frames' payload bytes
	// before and after (a frame that did not shrink counts as it is).
	FramesDeflated    int64 `json:"frames_deflated"`
	DeflatePlainBytes int64 `json:"deflate_plain_bytes"`
	DeflatedBytes     int64 `json:"deflated_bytes"`
}

// counters are the one place a Server's events are counted: Stats reads
// them, and the process's Prometheus collector (metrics.go) sums them over
// the Servers.
type counters struct {
	sent, encoded byFrame // frames written to websockets, encoded for hubs; by type

	conns, clients, streams, slowCloses, resets, tailCursor, tailErrors atomic.Int64
	handoffHits, handoffMisses, statesSkipped, pongTimeouts             atomic.Int64
	deflated                                                            deflateCount
}

// Open listens on cfg.Addr, starts the tailer at the store's current max seq
// and serves until Close.
func Open(cfg Config) (srv *Server, err error) {
	// Whether given (Config.Listener) or made here, a failed Open closes
	// its listener.
	ln := cfg.Listener
	defer func() {
		if err != nil && ln != nil {
			ln.Close()
		}
	}()
	if cfg.Store == nil {
		return nil, ErrNoStore
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel, sampled: logsample.New(refusalLogEvery)}
	s.ping = pingEvent(cfg.PingEvery)
	s.hubs = newHubs()
	s.handoff = newHandoff()
	s.watch = newWatchers()
	s.limiter = newLimiter(cfg.UpgradeRate, cfg.UpgradeBurst)
	s.sockets = newSlots(cfg.MaxSocketsPerClient)
	s.requests = newSlots(cfg.MaxRequestsPerClient)
	if cfg.Ready != nil {
		s.ready = &readiness{check: cfg.Ready}
	}
	if s.hosts, err = parseHostPatterns(cfg.PublicHosts); err != nil {
		cancel()
		return nil, err
	}

	start, err := cfg.Store.MaxSeq(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("web: read max seq: %w", err)
	}
	if cfg.WSEngine != WSEngineStd && cfg.WSEngine != WSEngineNbio {
		cancel()
		return nil, fmt.Errorf("web: unknown websocket engine %q (want %s or %s)", cfg.WSEngine, WSEngineStd, WSEngineNbio)
	}
	if ln == nil {
		if ln, err = Listen(cfg.Addr, cfg.AdminToken); err != nil {
			cancel()
			return nil, err
		}
	} else if err := checkExposed(ln.Addr(), cfg.AdminToken); err != nil {
		cancel()
		return nil, err
	}
	s.loopback = isLoopback(ln.Addr())
	if cfg.PeerTimeout > 0 {
		ln = &peerTimeoutListener{Listener: ln, timeout: cfg.PeerTimeout, log: cfg.Logger}
	}
	s.ln = ln
	// The nbio engine starts last, once nothing can fail, so a failed Open
	// has no engine to stop. Stopped before its loops run, nbio 1.6.8's
	// engine would spin for ever; newPoller waits for them (awaitPollers).
	if cfg.WSEngine == WSEngineNbio {
		if s.poll, err = newPoller(s); err != nil {
			cancel()
			return nil, err
		}
		context.AfterFunc(ctx, s.poll.shutdown)
	}
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       cfg.ReadTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		ConnState:         s.connState,
	}
	s.stats.tailCursor.Store(start)

	t := newTailer(ctx, s, start)
	s.tail = t
	metrics.Add(&s.stats)
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		t.run()
	}()
	go func() {
		defer s.wg.Done()
		s.runPresence(ctx)
	}()
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("web: serve", "addr", ln.Addr().String(), "err", err)
		}
	}()
	s.log.Info("web: serving", "addr", ln.Addr().String(), "seq", start, "ws_engine", cfg.WSEngine)
	return s, nil
}

// Addr returns the address the server listens on (with the real port when
// Config.Addr asked for ":0").
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns "http://" + Addr(), handy for tests and logs.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Handler returns the server's router, for embedding in another server.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Stats returns a snapshot of this server's counters.
func (s *Server) Stats() Stats {
	return Stats{
		Clients:           s.stats.clients.Load(),
		EventStreams:      s.stats.streams.Load(),
		Requests:          s.requests.total(),
		Conns:             s.stats.conns.Load(),
		Hubs:              int64(s.hubs.len()),
		LinesEncoded:      s.stats.encoded.get(frameLine),
		StatesEncoded:     s.stats.encoded.get(frameState),
		BoardsEncoded:     s.stats.encoded.get(frameBoard),
		FramesSent:        s.stats.sent.sum(),
		SlowCloses:        s.stats.slowCloses.Load(),
		PongTimeouts:      s.stats.pongTimeouts.Load(),
		Resets:            s.stats.resets.Load(),
		TailCursor:        s.stats.tailCursor.Load(),
		TailErrors:        s.stats.tailErrors.Load(),
		HandoffHits:       s.stats.handoffHits.Load(),
		HandoffMisses:     s.stats.handoffMisses.Load(),
		StatesSkipped:     s.stats.statesSkipped.Load(),
		FramesDeflated:    s.stats.deflated.frames.Load(),
		DeflatePlainBytes: s.stats.deflated.plain.Load(),
		DeflatedBytes:     s.stats.deflated.packed.Load(),
	}
}

// errDraining is /readyz's reason once Drain was called.
var errDraining = errors.New("web: shutting down")

// Drain makes /readyz answer 503 from now on, while everything else is
// served as before: a load balancer that polls /readyz takes the replica
// out of rotation before Close closes the listener, instead of sending new
// clients to a closed port and losing the requests in flight on its
// connections. Close follows; Drain does not end by itself.
func (s *Server) Drain() { s.draining.Store(true) }

// Close stops the tailer, closes every websocket with StatusGoingAway (so
// browsers reconnect, to another replica if need be), drains HTTP requests
// for up to 5 seconds and waits for every goroutine it started. Requests
// still in flight then (a client that stalls mid-request, a read the store
// keeps busy) are cut with a warning: the server holds no data, so that is
// still a clean stop.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		s.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				s.log.Warn("web: requests still in flight 5s after shutdown began; cut", "addr", s.ln.Addr().String())
			} else {
				s.closeErr = fmt.Errorf("web: shutdown: %w", err)
			}
			s.http.Close()
		}
		s.wg.Wait()
		// A pass that Committed began before the cancel (ownNow) ends
		// before the poller and its sockets go.
		s.tail.turn.Lock()
		s.tail.turn.Unlock()
		s.stopPoller()
		metrics.Retire(&s.stats)
		s.log.Info("web: closed", "addr", s.ln.Addr().String())
	})
	return s.closeErr
}

// track registers a websocket handler with the WaitGroup unless the server
// is closing, so Close never races a late wg.Add.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *Server) connState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		s.stats.conns.Add(1)
	case http.StateHijacked, http.StateClosed:
		s.stats.conns.Add(-1)
	}
}

// Listen listens on addr for a Server (Config.Listener), refusing as Open
// does an address other than loopback without an admin token
// (ErrAdminExposed). A replica calls it before it opens anything else, so
// that a port in use or an exposed admin stops it before it has taken
// entries to read.
func Listen(addr, adminToken string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("web: listen %s: %w", addr, err)
	}
	if err := checkExposed(ln.Addr(), adminToken); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

func checkExposed(a net.Addr, adminToken string) error {
	if !isLoopback(a) && adminToken == "" {
		return fmt.Errorf("%w: %s: set an admin token, or listen on 127.0.0.1", ErrAdminExposed, a)
	}
	return nil
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// stopPoller stops the nbio engine, if there is one, once its sockets are
// gone.
func (s *Server) stopPoller() {
	if s.poll != nil {
		s.poll.stopEngine()
	}
}
