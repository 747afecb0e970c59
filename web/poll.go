package web

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/lesismal/nbio"
	"github.com/lesismal/nbio/logging"
	"github.com/lesismal/nbio/mempool"
	"github.com/lesismal/nbio/nbhttp"
	nbws "github.com/lesismal/nbio/nbhttp/websocket"

	"github.com/codemojex/feed/internal/untrusted"
)

// Websocket engines (Config.WSEngine).
const (
	// WSEngineStd serves each websocket with coder/websocket on the
	// goroutine net/http hands over, plus a reader goroutine.
	WSEngineStd = "std"
	// WSEngineNbio keeps net/http for the handshake (routes, middleware,
	// limits, Origin check) and then hands the socket to an nbio epoll
	// poller: an idle socket holds no goroutine and no buffer. See
	// docs/benchmarks-journal.md, "Memory per client on a poller".
	WSEngineNbio = "nbio"
)

// poller holds the websockets of the nbio engine. The guarantees are the
// std engine's, kept by other means:
//
//   - order: one writer at a time per socket (pollSocket.busy), which is
//     the backfill on the request's goroutine first, then a short-lived
//     goroutine per wake-up that drains the mailbox in offer order;
//   - resume: the hub subscription comes before the backfill, and the
//     writer drops lines at or below the backfill's last seq, as pump does;
//     the store is read on the request's goroutine, never on the poller;
//   - slow clients: a full mailbox, more than SendBuffer bytes that the
//     kernel has not taken, or no progress on unsent bytes for
//     WriteTimeout close the socket as slow; the close frame carries the
//     same reason ("resume from your cursor");
//   - pings every PingEvery from one sweep goroutine; a peer that has not
//     answered within WriteTimeout is dropped.
type poller struct {
	s     *Server
	eng   *nbhttp.Engine
	limit int64 // SendBuffer

	mu    sync.Mutex
	socks map[*pollSocket]struct{}

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// pollSlack is what nbio may buffer beyond SendBuffer: room for the close
// frame of a socket that is already at its bound. nbio drops a socket
// outright past it.
const pollSlack = 64 << 10

var nbioLogOnce sync.Once

// nbioAllocator lends nbio its buffers; nil is nbio's default pool.
var nbioAllocator mempool.Allocator

// newWireCheck, when set, makes each socket's check of what it writes
// (internal/nbiocheck): in the web package's tests and in builds with the
// nbiocheck tag.
var newWireCheck func(game string, deflate bool) func(b []byte)

// newStreamCheck is newWireCheck for an event stream on the poller.
var newStreamCheck func(game string) func(b []byte)

// newPoller starts the nbio engine and the sweep goroutine.
func newPoller(s *Server) (*poller, error) {
	nbioLogOnce.Do(func() { logging.SetLogger(nbioLogger{s.log}) })
	p := &poller{s: s, limit: int64(s.cfg.SendBuffer), socks: map[*pollSocket]struct{}{}}
	p.eng = nbhttp.NewEngine(nbhttp.Config{
		Name:                    "web",
		MaxWriteBufferSize:      s.cfg.SendBuffer + pollSlack,
		ReleaseWebsocketPayload: true,
		SupportServerOnly:       true,
		BodyAllocator:           nbioAllocator,
	})
	// The kernel took n bytes of a socket: the basis of the slow-client
	// bound and of the stuck-write check. Called by nbio with the socket's
	// lock held; it takes no lock of ours.
	p.eng.OnWrittenSize(func(c *nbio.Conn, b []byte, n int) {
		var ps *pollSocket
		switch v := c.Session().(type) {
		case *nbws.Conn:
			ps, _ = v.Session().(*pollSocket)
		case *streamSession:
			ps = v.ps
		}
		if ps == nil {
			return
		}
		if ps.wire != nil {
			ps.wire(b[:n])
		}
		ps.written.Add(int64(n))
		ps.progress.Store(time.Now().UnixNano())
		select {
		case ps.room <- struct{}{}:
		default:
		}
	})
	// A websocket's connection enters the poller here, before it is
	// read: nbio's own writes to it go through ownWrites from then on
	// (before nbio can parse a byte of the peer's, which is what makes
	// it write).
	p.eng.Engine.OnOpen(func(c *nbio.Conn) {
		if wsc, ok := c.Session().(*nbws.Conn); ok {
			wsc.Conn = &ownWrites{Conn: wsc.Conn, ws: wsc}
		}
	})
	if err := p.eng.Start(); err != nil {
		return nil, fmt.Errorf("web: nbio engine: %w", err)
	}
	if err := awaitPollers(p.eng, 10*time.Second); err != nil {
		// Not stopped: a stop before the loops run would spin for ever
		// (awaitPollers). The engine's goroutines idle until the process,
		// whose Open failed, exits.
		return nil, fmt.Errorf("web: nbio pollers: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.sweep(ctx)
	}()
	return p, nil
}

// shutdown closes every socket with GoingAway (the server's context has
// ended); close waits for the sockets through s.wg, then calls stopEngine.
func (p *poller) shutdown() {
	for _, ps := range p.sockets() {
		ps.requestClose(websocket.StatusGoingAway, reasonShutdown, time.Second)
	}
}

// stopEngine ends the sweep and the nbio engine, once every socket ended.
func (p *poller) stopEngine() {
	p.stop()
	p.wg.Wait()
	p.eng.Stop()
}

func (p *poller) sockets() []*pollSocket {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*pollSocket, 0, len(p.socks))
	for ps := range p.socks {
		out = append(out, ps)
	}
	return out
}

// sweep pings every socket every PingEvery and drops the ones that did not
// answer the last ping, or whose unsent bytes have not moved, within
// WriteTimeout.
func (p *poller) sweep(ctx context.Context) {
	s := p.s
	every := min(max(s.cfg.WriteTimeout/4, 10*time.Millisecond), time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	lastPing := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			ping := now.Sub(lastPing) >= s.cfg.PingEvery
			if ping {
				lastPing = now
			}
			for _, ps := range p.sockets() {
				ps.check(now, ping)
			}
		}
	}
}

// nbioLogger hands nbio's warnings and errors to the server's logger (nbio
// logs to stdout by default): "web: nbio", nbio's words under err as the
// redis client's are, and the stack of a panic nbio recovered whole under
// stack, as the websocket's own panic lines have it. Until 6 Dec 2026 the
// words went under a second msg key, and the stack was cut with them
// (TestNbioLinesKeepTheirKeys).
type nbioLogger struct{ log *slog.Logger }

func (nbioLogger) SetLevel(int)         {}
func (nbioLogger) Debug(string, ...any) {}
func (nbioLogger) Info(string, ...any)  {}
func (l nbioLogger) Warn(f string, v ...any) {
	l.log.Warn("web: nbio", nbioAttrs(fmt.Sprintf(f, v...))...)
}
func (l nbioLogger) Error(f string, v ...any) {
	l.log.Error("web: nbio", nbioAttrs(fmt.Sprintf(f, v...))...)
}

// nbioAttrs splits an nbio line: its words, bounded, and the stack nbio
// writes after them when it recovered a panic ("…: %v\n%v\n").
func nbioAttrs(said string) []any {
	words, stack, ok := strings.Cut(said, "\n")
	if !ok || !strings.HasPrefix(stack, "goroutine ") {
		return []any{untrusted.Attr("err", strings.TrimRight(said, "\n"))}
	}
	return []any{untrusted.Attr("err", words), "stack", strings.TrimRight(stack, "\n")}
}
