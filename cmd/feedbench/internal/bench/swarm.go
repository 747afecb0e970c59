package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// SwarmConfig is a set of websocket clients of one renderer.
type SwarmConfig struct {
	BaseURL string   // http://host:port of the renderer
	Games   []string // client i watches Games[i%len(Games)]
	N       int
	// IPs is the number of loopback source addresses (127.1.x.y) the
	// clients are spread over: the renderer rate-limits upgrades per
	// address (default: one per 10 clients).
	IPs int
	// Concurrency is the number of dials in flight (default 200).
	Concurrency int
	// Streams makes the clients take the event stream
	// (/games/GAME/events, the page's fallback) instead of websockets.
	Streams bool
	// Compress makes the websocket clients offer permessage-deflate, as
	// browsers do (no context takeover: what the renderer answers).
	Compress bool
}

// Delivery is one line frame received by one client.
type Delivery struct {
	ID     string `json:"id"` // the line's EVT id
	Seq    int64  `json:"s"`  // the line's seq, as its frame says
	At     int64  `json:"at"` // when the frame was read, unix ns
	Client int    `json:"c"`  // the client's index in its Swarm
}

// Swarm is a set of connected websocket clients.
type Swarm struct {
	clients []*wsClient
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	drops   atomic.Int64
	wire    atomic.Int64 // bytes read from the clients' TCP connections
}

type wsClient struct {
	index int
	game  string
	conn  *websocket.Conn
	// stream, cancel: an event-stream client's response body, and the
	// end of its request.
	stream *bufio.Reader
	cancel context.CancelFunc

	mu         sync.Mutex
	frames     int64
	bytes      int64 // payload bytes of the frames
	deliveries []Delivery
	err        error
}

// Connect dials every client and returns once each has received its first
// frame (the scoreboard state), so that the renderer holds them all.
func Connect(ctx context.Context, cfg SwarmConfig) (*Swarm, error) {
	if cfg.IPs <= 0 {
		cfg.IPs = max(1, cfg.N/10)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 200
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s := &Swarm{cancel: cancel, clients: make([]*wsClient, cfg.N)}
	transports := make([]*http.Transport, cfg.IPs)
	for i := range transports {
		d := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 1, byte(i/250), byte(i%250+1))}}
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countingConn{Conn: c, n: &s.wire}, nil
		}
		transports[i] = &http.Transport{DialContext: dial, DisableCompression: true}
	}
	mode := websocket.CompressionDisabled
	if cfg.Compress {
		mode = websocket.CompressionNoContextTakeover
	}
	sem := make(chan struct{}, cfg.Concurrency)
	errs := make(chan error, cfg.N)
	var dialWG sync.WaitGroup
	for i := range cfg.N {
		c := &wsClient{index: i, game: cfg.Games[i%len(cfg.Games)]}
		s.clients[i] = c
		dialWG.Add(1)
		sem <- struct{}{}
		go func() {
			defer dialWG.Done()
			defer func() { <-sem }()
			// board=1 as the page script asks: the frames a browser gets.
			url := strings.Replace(cfg.BaseURL, "http", "ws", 1) + "/games/" + c.game + "/live?after=0&board=1"
			hc := &http.Client{Transport: transports[i%len(transports)]}
			dial := func(ctx context.Context, url string, hc *http.Client) ([]byte, error) {
				return c.dial(ctx, url, hc, mode)
			}
			if cfg.Streams {
				url = cfg.BaseURL + "/games/" + c.game + "/events?after=0&board=1"
				dial = func(ctx context.Context, url string, hc *http.Client) ([]byte, error) {
					return c.open(ctx, runCtx, url, hc)
				}
			}
			first, err := dial(ctx, url, hc)
			if err != nil {
				errs <- fmt.Errorf("client %d (%s): %w", i, c.game, err)
				return
			}
			c.record(first, time.Now())
			s.wg.Add(1)
			go func() { defer s.wg.Done(); c.read(runCtx) }()
		}()
	}
	dialWG.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if len(all) > 0 {
		s.Close()
		return nil, fmt.Errorf("bench: %d of %d clients failed to connect; first: %w", len(all), cfg.N, all[0])
	}
	return s, nil
}

// dial connects, retrying refusals (rate limit, capacity) with backoff, and
// reads the first frame.
func (c *wsClient) dial(ctx context.Context, url string, hc *http.Client, mode websocket.CompressionMode) ([]byte, error) {
	return retryRefused(ctx, func() ([]byte, int, error) {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		conn, resp, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPClient: hc, CompressionMode: mode})
		cancel()
		if err != nil {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			return nil, status, err
		}
		conn.SetReadLimit(1 << 20)
		c.conn = conn
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, data, err := conn.Read(rctx)
		if err != nil {
			conn.CloseNow()
			return nil, 0, fmt.Errorf("first frame: %w", err)
		}
		return data, 0, nil
	})
}

// open is dial for an event-stream client: the request lives in runCtx
// (Close ends it), the wait for the stream and its first frame in ctx.
func (c *wsClient) open(ctx, runCtx context.Context, url string, hc *http.Client) ([]byte, error) {
	return retryRefused(ctx, func() ([]byte, int, error) {
		rctx, cancel := context.WithCancel(runCtx)
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		slow := time.AfterFunc(30*time.Second, cancel)
		defer slow.Stop()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
		if err != nil {
			cancel()
			return nil, 0, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			cancel()
			return nil, 0, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			cancel()
			return nil, resp.StatusCode, fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		c.stream, c.cancel = bufio.NewReader(resp.Body), cancel
		data, err := c.event()
		if err != nil {
			cancel()
			return nil, 0, fmt.Errorf("first event: %w", err)
		}
		return data, 0, nil
	})
}

// retryRefused calls try until it succeeds, fails otherwise than by a
// refusal (HTTP 429 or 503: the rate limit, capacity) or 2 minutes pass,
// backing off from 100 ms to 2 s between refusals.
func retryRefused(ctx context.Context, try func() (data []byte, status int, err error)) ([]byte, error) {
	backoff := 100 * time.Millisecond
	deadline := time.Now().Add(2 * time.Minute)
	for {
		data, status, err := try()
		if err == nil {
			return data, nil
		}
		retry := status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
		if !retry || time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// event reads an event stream up to its next frame's data (the server's
// frames are one data line each), past pings (named events, which carry
// no frame).
func (c *wsClient) event() ([]byte, error) {
	named := false
	for {
		line, err := c.stream.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		switch {
		case len(line) == 1: // the event's end
			named = false
		case bytes.HasPrefix(line, []byte("event: ")):
			named = true
		case !named && bytes.HasPrefix(line, []byte("data: ")):
			return bytes.TrimSuffix(line[len("data: "):], []byte("\n")), nil
		}
	}
}

func (c *wsClient) read(ctx context.Context) {
	next := func() ([]byte, error) {
		_, data, err := c.conn.Read(ctx)
		return data, err
	}
	if c.stream != nil {
		next = c.event
	}
	for {
		data, err := next()
		now := time.Now()
		if err != nil {
			c.mu.Lock()
			if ctx.Err() == nil {
				c.err = err
			}
			c.mu.Unlock()
			return
		}
		c.record(data, now)
	}
}

// record counts a frame and, when it is a line, when it arrived.
func (c *wsClient) record(data []byte, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frames++
	c.bytes += int64(len(data))
	const key = `"id":"`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return
	}
	j := i + len(key)
	k := bytes.IndexByte(data[j:], '"')
	if k < 0 {
		return
	}
	c.deliveries = append(c.deliveries, Delivery{ID: string(data[j : j+k]), Seq: frameSeq(data), At: now.UnixNano(), Client: c.index})
}

// frameSeq returns the seq a line frame carries (docs/contracts.md,
// `{"t":"line","seq":N,…}`), or 0 when it has none (the bare
// broadcaster's frames).
func frameSeq(data []byte) int64 {
	const key = `"seq":`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return 0
	}
	var n int64
	for _, b := range data[i+len(key):] {
		if b < '0' || b > '9' {
			break
		}
		n = n*10 + int64(b-'0')
	}
	return n
}

// Deliveries returns every line received so far, by all clients.
func (s *Swarm) Deliveries() []Delivery {
	var out []Delivery
	for _, c := range s.clients {
		c.mu.Lock()
		out = append(out, c.deliveries...)
		c.mu.Unlock()
	}
	return out
}

// Received returns the number of frames received by all clients, their
// payload bytes, and the bytes the clients read off their connections
// (frames as sent, compressed or not, with their headers; the handshakes'
// responses).
func (s *Swarm) Received() (frames, bytes, wire int64) {
	for _, c := range s.clients {
		c.mu.Lock()
		frames, bytes = frames+c.frames, bytes+c.bytes
		c.mu.Unlock()
	}
	return frames, bytes, s.wire.Load()
}

// countingConn counts the bytes read from a connection into n.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	k, err := c.Conn.Read(b)
	c.n.Add(int64(k))
	return k, err
}

// Lost returns the indexes of the clients that lost their connection.
func (s *Swarm) Lost() []int {
	lost, _ := s.LostWhy()
	return lost
}

// Dropped returns how many clients lost their connection, and the first
// error.
func (s *Swarm) Dropped() (int, error) {
	lost, first := s.LostWhy()
	return len(lost), first
}

// LostWhy returns the indexes of the clients that lost their connection,
// and the first one's error.
func (s *Swarm) LostWhy() ([]int, error) {
	var lost []int
	var first error
	for i, c := range s.clients {
		c.mu.Lock()
		if c.err != nil {
			lost = append(lost, i)
			if first == nil {
				first = c.err
			}
		}
		c.mu.Unlock()
	}
	return lost, first
}

// Close closes every client.
func (s *Swarm) Close() {
	s.cancel()
	for _, c := range s.clients {
		if c != nil && c.conn != nil {
			c.conn.CloseNow()
		}
		if c != nil && c.cancel != nil {
			c.cancel()
		}
	}
	s.wg.Wait()
}

var errNotDelivered = errors.New("bench: line not delivered to every client")
