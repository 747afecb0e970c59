package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/proc"
)

// BroadcastChannel is the Redis pub/sub channel the bare broadcaster
// listens on. A message is GAME, a NUL byte, then one websocket frame as
// the renderer would send it.
const BroadcastChannel = "feedbench:frames"

// broadcasterQueue is the bare broadcaster's frames per client before it
// drops the client (coder/websocket's chat example keeps 16).
const broadcasterQueue = 64

// Broadcaster is the benchmarks' baseline: the least a server must do to
// push the renderer's frames to the same clients. It receives frames that
// are already rendered and encoded over Redis pub/sub and writes each to
// the websockets of its game, the canonical coder/websocket broadcaster: a
// goroutine per socket (its handler) writing from a small channel, a
// CloseRead reader, one context per write. No store, no seq, no resume,
// no Origin policy, no rate limit: what is left is the cost of the
// transport that the renderer is compared with.
type Broadcaster struct {
	mu   sync.Mutex
	hubs map[string]map[*bsub]struct{}
}

type bsub struct {
	msgs chan []byte
	slow chan struct{}
	once sync.Once
}

// ServeBroadcaster listens on addr, subscribes to BroadcastChannel on the
// Redis at redisURL and serves /games/{game}/live until ctx ends. ready is
// called with the listening address.
func ServeBroadcaster(ctx context.Context, redisURL, addr string, ready func(addr string)) error {
	ps, closeSub, err := subscribeFrames(ctx, redisURL)
	if err != nil {
		return err
	}
	defer closeSub()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	b := &Broadcaster{hubs: map[string]map[*bsub]struct{}{}}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	ready(ln.Addr().String())
	return relayFrames(ctx, ps, b.publish)
}

// subscribeFrames subscribes to BroadcastChannel on the Redis at redisURL
// and returns once the subscription is confirmed, with the function that
// closes it and its client.
func subscribeFrames(ctx context.Context, redisURL string) (*redis.PubSub, func(), error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, nil, err
	}
	rdb := redis.NewClient(opt)
	ps := rdb.Subscribe(ctx, BroadcastChannel)
	closeSub := func() { ps.Close(); rdb.Close() }
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		closeSub()
		return nil, nil, fmt.Errorf("bench: subscribe: %w", err)
	}
	return ps, closeSub, nil
}

// relayFrames hands every frame received on ps to publish, with its game,
// until ctx ends.
func relayFrames(ctx context.Context, ps *redis.PubSub, publish func(game string, frame []byte)) error {
	// go-redis does not end a blocked receive when its context ends;
	// closing the subscription does.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	for {
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("bench: receive: %w", err)
		}
		game, frame, ok := strings.Cut(msg.Payload, "\x00")
		if ok {
			publish(game, []byte(frame))
		}
	}
}

// publish offers frame to every client of game; a client whose queue is
// full is dropped.
func (b *Broadcaster) publish(game string, frame []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.hubs[game] {
		select {
		case s.msgs <- frame:
		default:
			delete(b.hubs[game], s)
			s.once.Do(func() { close(s.slow) })
		}
	}
}

// stateFrame is the first frame every client gets, as the renderer sends
// the scoreboard first: the swarm waits for one frame per client.
var stateFrame = []byte(`{"t":"state","html":""}`)

// ServeHTTP serves /games/{game}/live: the socket's whole life runs in its
// handler.
func (b *Broadcaster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	game, ok := strings.CutPrefix(r.URL.Path, "/games/")
	game, live := strings.CutSuffix(game, "/live")
	if !ok || !live || game == "" {
		http.NotFound(w, r)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx := conn.CloseRead(context.Background())
	s := &bsub{msgs: make(chan []byte, broadcasterQueue), slow: make(chan struct{})}
	b.mu.Lock()
	if b.hubs[game] == nil {
		b.hubs[game] = map[*bsub]struct{}{}
	}
	b.hubs[game][s] = struct{}{}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.hubs[game], s)
		b.mu.Unlock()
	}()
	if err := writeTimeout(ctx, conn, stateFrame); err != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.slow:
			conn.Close(websocket.StatusPolicyViolation, "slow")
			return
		case f := <-s.msgs:
			if err := writeTimeout(ctx, conn, f); err != nil {
				return
			}
		}
	}
}

func writeTimeout(ctx context.Context, c *websocket.Conn, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.Write(ctx, websocket.MessageText, data)
}

// BroadcasterProc is the bare broadcaster run as its own process
// ("feedbench broadcaster"), so that its CPU and memory are measured as the
// renderer's are.
type BroadcasterProc struct {
	p     *proc.Process
	stdin io.WriteCloser
	addr  string
}

// StartBroadcaster runs "self broadcaster -redis URL" and waits until it
// listens.
func StartBroadcaster(ctx context.Context, self, redisURL string, log io.Writer) (*BroadcasterProc, error) {
	return StartBroadcasterEngine(ctx, self, EngineStd, redisURL, log)
}

// StartBroadcasterEngine runs "self broadcaster -engine ENGINE -redis URL"
// and waits until it listens.
func StartBroadcasterEngine(ctx context.Context, self, engine, redisURL string, log io.Writer) (*BroadcasterProc, error) {
	cmd := exec.CommandContext(ctx, self, "broadcaster", "-engine", engine, "-redis", redisURL)
	cmd.Stderr = log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p, err := proc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("bench: start broadcaster: %w", err)
	}
	b := &BroadcasterProc{p: p, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		b.Stop()
		return nil, errors.Join(fmt.Errorf("bench: broadcaster said %q", line), err)
	}
	b.addr = addr
	return b, nil
}

// URL is its base URL.
func (b *BroadcasterProc) URL() string { return "http://" + b.addr }

// Pid is its process id.
func (b *BroadcasterProc) Pid() int { return b.p.Pid() }

// Stop kills it and waits for it.
func (b *BroadcasterProc) Stop() {
	b.stdin.Close()
	b.p.Kill()
}
