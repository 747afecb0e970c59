package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lesismal/nbio/logging"
	"github.com/lesismal/nbio/nbhttp"
	"github.com/lesismal/nbio/nbhttp/websocket"
)

// Broadcaster engines: which server holds the bare broadcaster's sockets.
const (
	// EngineStd is net/http + coder/websocket, a goroutine per socket
	// (Broadcaster).
	EngineStd = "std"
	// EngineNbioStd keeps net/http for the handshake (the router, the
	// middleware, the Origin check) and hands the upgraded socket to an
	// nbio poller (websocket.Upgrader.UpgradeAndTransferConnToPoller):
	// the form a web server with a net/http stack could adopt.
	EngineNbioStd = "nbio-std"
)

// pollWriteBuffer is what nbio may hold unsent for one socket before it
// closes it: the poller broadcaster's slow-client bound (the goroutine
// broadcaster's is broadcasterQueue frames).
const pollWriteBuffer = 64 << 10

// PollBroadcaster is the bare broadcaster on a poller (nbio): the same
// frames, the same hubs and the same first state frame as Broadcaster, but
// no goroutine per socket. publish writes each frame to every socket of
// its game from the one goroutine that receives it; nbio writes what the
// socket takes at once and keeps the rest until the poller sees the socket
// writable, and closes a socket whose unsent bytes exceed pollWriteBuffer.
// Nothing is read from a socket but control frames, which nbio answers on
// its poller.
type PollBroadcaster struct {
	up *websocket.Upgrader

	mu   sync.Mutex
	hubs map[string]map[*websocket.Conn]struct{}
}

// ServeBroadcasterEngine serves the bare broadcaster on engine (EngineStd
// or EngineNbioStd); see ServeBroadcaster.
func ServeBroadcasterEngine(ctx context.Context, engine, redisURL, addr string, ready func(addr string)) error {
	if engine == EngineStd {
		return ServeBroadcaster(ctx, redisURL, addr, ready)
	}
	return ServePollBroadcaster(ctx, engine, redisURL, addr, ready)
}

// ServePollBroadcaster is ServeBroadcaster on a poller: engine is
// EngineNbioStd. (nbio's own HTTP server was measured too, and dropped:
// Go's race detector reports a race inside it, between its accept loop and
// its poller, in nbio v1.6.8; see docs/benchmarks-journal.md, "Memory per
// client on a poller".)
func ServePollBroadcaster(ctx context.Context, engine, redisURL, addr string, ready func(addr string)) error {
	// nbio logs to stdout by default, where the broadcaster process
	// says where it listens.
	logging.Output = os.Stderr
	logging.SetLevel(logging.LevelWarn)
	ps, closeSub, err := subscribeFrames(ctx, redisURL)
	if err != nil {
		return err
	}
	defer closeSub()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	b := &PollBroadcaster{hubs: map[string]map[*websocket.Conn]struct{}{}}
	cfg := nbhttp.Config{
		Name:               "feedbench",
		Handler:            b,
		MaxWriteBufferSize: pollWriteBuffer,
		// A socket's payload is dropped once its callback returns: the
		// broadcaster keeps nothing a client sends.
		ReleaseWebsocketPayload: true,
	}
	if engine != EngineNbioStd {
		return fmt.Errorf("bench: unknown broadcaster engine %q", engine)
	}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	defer srv.Close()
	eng := nbhttp.NewEngine(cfg)
	b.up = websocket.NewUpgrader()
	b.up.Engine = eng
	// No read deadline: the goroutine broadcaster has none either, and the
	// clients do not ping.
	b.up.KeepaliveTime = 0
	b.up.OnClose(b.leave)
	if err := eng.Start(); err != nil {
		return fmt.Errorf("bench: nbio: %w", err)
	}
	defer eng.Stop()
	go srv.Serve(ln)
	ready(ln.Addr().String())
	return relayFrames(ctx, ps, b.publish)
}

// ServeHTTP upgrades /games/{game}/live and joins the socket to its game's
// hub; with EngineNbioStd the socket then leaves net/http for the poller.
func (b *PollBroadcaster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	game, ok := strings.CutPrefix(r.URL.Path, "/games/")
	game, live := strings.CutSuffix(game, "/live")
	if !ok || !live || game == "" {
		http.NotFound(w, r)
		return
	}
	var c *websocket.Conn
	var err error
	if _, std := w.(*nbhttp.Response); std {
		c, err = b.up.Upgrade(w, r, nil)
	} else {
		c, err = b.up.UpgradeAndTransferConnToPoller(w, r, nil)
	}
	if err != nil {
		return
	}
	c.SetSession(game)
	// Joining and the state frame under the hub's lock: no line frame can
	// overtake the state frame, as in the goroutine broadcaster.
	b.mu.Lock()
	if b.hubs[game] == nil {
		b.hubs[game] = map[*websocket.Conn]struct{}{}
	}
	b.hubs[game][c] = struct{}{}
	err = c.WriteMessage(websocket.TextMessage, stateFrame)
	if err != nil {
		delete(b.hubs[game], c)
	}
	b.mu.Unlock()
	if err != nil {
		c.Close() // outside the lock: nbio may call leave from Close
	}
}

// publish writes frame to every socket of game; a socket nbio cannot write
// to (closed, or over its write buffer) is dropped.
func (b *PollBroadcaster) publish(game string, frame []byte) {
	var dead []*websocket.Conn
	b.mu.Lock()
	for c := range b.hubs[game] {
		if err := c.WriteMessage(websocket.TextMessage, frame); err != nil {
			delete(b.hubs[game], c)
			dead = append(dead, c)
		}
	}
	b.mu.Unlock()
	for _, c := range dead {
		c.Close() // outside the lock: nbio may call leave from Close
	}
}

// leave removes a closed socket from its hub.
func (b *PollBroadcaster) leave(c *websocket.Conn, _ error) {
	game, _ := c.Session().(string)
	b.mu.Lock()
	delete(b.hubs[game], c)
	b.mu.Unlock()
}
