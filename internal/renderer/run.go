// Package renderer wires one codemojex feed replica together: Redis, the
// consumer, the store, the doorbell and the web server. cmd/renderer runs
// it; tests and the benchmarks' in-process mode run it with ":0" and temp
// dirs.
package renderer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/pipeline"
	"github.com/codemojex/feed/internal/presence"
	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

// ErrRunTwice is Run's answer once Run or Close has been called on the
// Main: one Run, then one Close, stops whatever the Run opened.
var ErrRunTwice = errors.New("renderer: Run after Run or Close")

// Main is the renderer process: it wires Redis, the consumer, the store and
// the web server together. Tests run it in-process with ":0" and temp dirs.
type Main struct {
	Config Config
	Logger *slog.Logger

	rdb      redis.UniversalClient
	db       *store.DB
	consumer *feed.Consumer
	server   *web.Server
	ln       net.Listener  // bound first, until web.Open owns it
	starting *web.Starting // answers /healthz on ln until web.Open takes it; holds the rest for server
	// live is server once it serves: the consumer, opened first, hands it
	// the lines it commits (nil until then: the doorbell covers it).
	live atomic.Pointer[web.Server]

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	doorbell chan struct{} // wakes this replica's tailer
	ringer   *Ringer       // rings the peers' doorbell (ring)

	closeOnce sync.Once
	closeErr  error

	mu        sync.Mutex
	ran       bool        // Run or Close was called: Run opens nothing again
	storeLost error       // the store file was deleted or replaced
	notes     []feed.Note // the renderer's own, for the status page
	bell      *Doorbell
}

// NewMain returns a Main with default configuration.
func NewMain() *Main {
	return &Main{doorbell: make(chan struct{}, 1)}
}

// Addr returns the address the web server listens on (after Run).
func (m *Main) Addr() string { return m.server.Addr() }

// Consumer returns the renderer's consumer (after Run; nil with -consume=false).
func (m *Main) Consumer() *feed.Consumer { return m.consumer }

// DB returns the renderer's store (after Run).
func (m *Main) DB() *store.DB { return m.db }

// Run opens every part and returns once the replica is serving. It fails
// when the consumer name is held by another live process. A Main runs
// once: Run after Run or Close returns ErrRunTwice and opens nothing.
func (m *Main) Run(ctx context.Context) error {
	m.mu.Lock()
	ran := m.ran
	m.ran = true
	m.mu.Unlock()
	if ran {
		return ErrRunTwice
	}
	if m.Logger == nil {
		m.Logger = newLogger(m.Config.LogLevel)
	}
	log := m.Logger.With("consumer", m.Config.Consumer, "group", m.Config.Group)
	routeRedisLogs(log)

	// The port first: a port in use (or an admin left exposed) must stop
	// the replica before it takes its consumer name and entries it would
	// leave pending for MinIdle as it exits.
	ln, err := web.Listen(m.Config.HTTP, m.Config.AdminToken)
	if err != nil {
		return err
	}
	m.ln = ln
	// Answered from here on: opening the store and waiting for the
	// consumer name can take seconds, and a liveness probe must not hang
	// meanwhile (TestHealthzWhileStarting). Other requests wait for the
	// server, as they did in the listen queue.
	m.starting = web.ServeStarting(ln, peerTimeout(m.Config.PeerTimeout), log)

	rdb, err := redisconn.Open(m.Config.RedisURL)
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	m.rdb = rdb

	// The store logs (migrations, a copied file's positions, checkpoint
	// failures) through the renderer's logger: its level, format and keys.
	m.db, err = store.OpenWith(ctx, m.Config.DB, store.Options{Logger: log})
	if err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel

	m.bell = &Doorbell{Client: m.rdb, Channel: event.DoorbellChannel(m.Config.Group), Logger: log}
	if m.Config.Consume {
		m.ringer = NewRinger(m.bell, m.Config.Consumer)
		m.wg.Add(1)
		go func() { defer m.wg.Done(); m.ringer.Run(runCtx) }()
		if err := m.openConsumer(ctx, log); err != nil {
			return err
		}
	}
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.watchFile(runCtx, log) }()
	if m.Config.Doorbell {
		m.wg.Add(1)
		go func() { defer m.wg.Done(); m.bell.Listen(runCtx, m.rang) }()
	}

	storeID, err := m.db.ID(ctx)
	if err != nil {
		return err
	}
	pc := presence.Config{Client: m.rdb, Replica: presence.ReplicaID(m.Config.Consumer), TTL: m.Config.PresenceTTL}
	if m.Config.Consume {
		// The lease makes this process the name's only live holder: its
		// count replaces the one a crashed predecessor left.
		pc.Name = m.Config.Group + "/" + m.Config.Consumer
	}
	pres, err := presence.New(pc)
	if err != nil {
		return err
	}
	m.starting.Release()
	m.ln = nil // web.Open owns it from here, whether it fails or not
	m.server, err = web.Open(web.Config{
		Presence:       pres,
		PresenceEvery:  m.Config.PresenceEvery,
		PresenceTTL:    m.Config.PresenceTTL,
		Addr:           m.Config.HTTP,
		Listener:       ln,
		StoreID:        storeID,
		Store:          m.db,
		Status:         m.status,
		Ready:          m.ready,
		Doorbell:       m.doorbell,
		AllowedOrigins: m.Config.origins(),
		AdminToken:     m.Config.AdminToken,
		SecretFlags:    m.Config.secrets,
		PublicHosts:    m.Config.publicHosts(),
		TrustedProxies: m.Config.proxies,
		Logger:         log,

		WSEngine:             m.Config.WSEngine,
		NoCompression:        !m.Config.WSCompress,
		SendBuffer:           m.Config.SendBuffer,
		PeerTimeout:          peerTimeout(m.Config.PeerTimeout),
		ResponseTimeout:      m.Config.ResponseTimeout,
		MaxClients:           m.Config.MaxClients,
		MaxSocketsPerClient:  m.Config.MaxSocketsPerClient,
		MaxRequestsPerClient: m.Config.MaxRequestsPerClient,
		TimelineLines:        m.Config.TimelineLines,
		TimelineBytes:        m.Config.TimelineBytes,
	})
	if err != nil {
		return err
	}
	m.live.Store(m.server)
	m.starting.Handover(m.server.Handler())
	log.Info("renderer started", "http", m.server.Addr(), "db", m.Config.DB, "consume", m.Config.Consume)
	return nil
}

// nameWait is how long a starting renderer waits for its consumer name to
// be free: a crashed holder's lease expires within feed's default lease TTL
// (5s), so a restart right after a SIGKILL succeeds, while a second live
// process with the same name still refuses to start.
const nameWait = 7 * time.Second

func (m *Main) openConsumer(ctx context.Context, log *slog.Logger) error {
	deadline := time.Now().Add(nameWait)
	for i := 0; ; i++ {
		err := m.tryOpenConsumer(ctx)
		if err == nil || !errors.Is(err, feed.ErrConsumerTaken) || time.Now().After(deadline) {
			return err
		}
		if i == 0 {
			log.Info("consumer name held; waiting for its lease to expire", "wait", nameWait, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (m *Main) tryOpenConsumer(ctx context.Context) error {
	p := &pipeline.Pipeline{DB: m.db, Renderer: m.Config.Consumer, Committed: m.ring, Lines: m.handOff, MaxAhead: m.Config.FutureBound}
	var err error
	m.consumer, err = feed.Open(ctx, feed.Config{
		DeadMaxLen:   m.Config.DeadMax,
		Position:     m.position,
		Client:       m.rdb,
		Group:        m.Config.Group,
		Consumer:     m.Config.Consumer,
		Registry:     event.RegistryKey,
		WakeEvery:    m.Config.GamesRefresh,
		ActiveWindow: m.Config.ActiveWindow,
		SweepEvery:   m.Config.SweepEvery,
		Linger:       m.Config.Linger,
		DeadKey:      event.DeadKeyOf,
		MinIdle:      m.Config.MinIdle,
		ClaimEvery:   m.Config.ClaimEvery,
		PoisonAfter:  m.Config.PoisonAfter,
		BatchHandler: p.Handle,
		Prepare:      p.Prepare, // a backlog renders on one core while it commits on the other
		Logger:       m.Logger,  // feed adds group and consumer itself
	})
	return err
}

// Shutdown stops the replica the way SIGTERM does: /readyz answers 503 at
// once, while the replica goes on serving and consuming for
// Config.ShutdownDelay (or until ctx ends), so that load balancers take it
// out of rotation before its listener closes; then Close. Without it the
// listener closed milliseconds after the first failed probe could be seen,
// and a balancer kept sending clients to a closed port until its next
// probes.
func (m *Main) Shutdown(ctx context.Context) error {
	if srv := m.live.Load(); srv != nil && m.Config.ShutdownDelay > 0 {
		srv.Drain()
		m.Logger.Info("draining: /readyz answers 503; serving until the delay ends", "consumer", m.Config.Consumer, "group", m.Config.Group, "delay", m.Config.ShutdownDelay)
		t := time.NewTimer(m.Config.ShutdownDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	return m.Close()
}

// Close stops the consumer first (it settles what is in hand), then the web
// server and the rest. It is safe after a failed Run, and more than once
// (a test closes a replica, then its cleanup does).
func (m *Main) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.ran = true
		m.mu.Unlock()
		m.closeErr = m.close()
	})
	return m.closeErr
}

func (m *Main) close() error {
	var errs []error
	if m.consumer != nil {
		errs = append(errs, m.consumer.Close())
	}
	if m.server != nil {
		errs = append(errs, m.server.Close())
	}
	if m.starting != nil {
		m.starting.Close() // after the server: what it holds on them has ended
	}
	if m.ln != nil {
		m.ln.Close() // Run failed before the server took it
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
	if m.db != nil {
		errs = append(errs, m.db.Close())
	}
	if m.rdb != nil {
		errs = append(errs, m.rdb.Close())
	}
	return errors.Join(errs...)
}

// statusRecent is how many of the most recent games the status page shows
// besides the consumer's read set: the page's cost follows activity, not
// the registry (docs/reader-law.md, "The read set").
const statusRecent = 200

func (m *Main) status(ctx context.Context) (feed.Status, error) {
	var working []string
	if m.consumer != nil {
		working = m.consumer.Working()
	}
	// What the replica knows without Redis, its group and its notes (a
	// paused store, say), is shown when Redis is what fails: the page
	// showed an empty group and none of the notes.
	streams, games, err := feed.StatusStreams(ctx, m.rdb, statusRecent, working)
	if err != nil {
		return feed.Status{Group: m.Config.Group, At: time.Now().UTC(), Notes: m.allNotes()}, err
	}
	st, err := feed.Inspect(ctx, m.rdb, m.Config.Group, streams, event.DeadKeyOf) // with its group and time, failed or not
	st.Notes = m.allNotes()
	st.Games = games
	return st, err
}

func (m *Main) ready(ctx context.Context) error {
	m.mu.Lock()
	lost := m.storeLost
	m.mu.Unlock()
	if lost != nil {
		return fmt.Errorf("sqlite: %w; restart the renderer (docs/operations.md)", lost)
	}
	if err := m.db.CheckFile(); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if m.consumer != nil {
		if err := m.consumer.Ready(); err != nil {
			return err
		}
	}
	if err := m.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if _, err := m.db.MaxSeq(ctx); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}

// handOff gives the lines this process has just committed to its own web
// server, which sends them without reading them back from the store.
func (m *Main) handOff(lines []store.Line) {
	if srv := m.live.Load(); srv != nil {
		srv.Committed(lines)
		return
	}
	m.wake() // not serving yet: the tailer will read the store
}

// ring asks for the host's doorbell to be rung after a committed batch,
// for the peers (this replica's own tailer got the lines from handOff),
// without waiting for it (Ringer). A lost ring costs at most a tail period.
func (m *Main) ring(context.Context, int) { m.ringer.Request() }

func (m *Main) wake() {
	select {
	case m.doorbell <- struct{}{}:
	default:
	}
}

// rang wakes the tailer on a peer's ring; this replica's own rings are
// skipped once it serves, since handOff gave its tailer those lines. A
// web-only replica rings nothing and has no handOff: a ring under its name
// is a consuming peer's (both default to the host name).
func (m *Main) rang(from string) {
	if from == m.Config.Consumer && m.Config.Consume && m.live.Load() != nil {
		return
	}
	m.wake()
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// peerTimeout maps the -peer-timeout flag, where 0 means the kernel's
// default, to web.Config.PeerTimeout, where that is negative.
func peerTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
