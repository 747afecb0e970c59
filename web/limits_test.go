package web_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/web"
)

// dialFrom dials a websocket of e's server from the local address ip and
// returns the connection or the HTTP status of the refusal.
func (e *env) dialFrom(ip string, hdr http.Header) (*websocket.Conn, int, error) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, e.wsURL("g1", 0), &websocket.DialOptions{HTTPClient: hc, HTTPHeader: hdr})
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		return nil, code, err
	}
	e.tb.Cleanup(func() { c.CloseNow() })
	return c, http.StatusSwitchingProtocols, nil
}

// dialMany dials n websockets at once from ip and returns the accepted
// ones and a count of the refusals by HTTP status.
func (e *env) dialMany(ip string, n int) ([]*websocket.Conn, map[int]int) {
	var mu sync.Mutex
	var conns []*websocket.Conn
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, code, _ := e.dialFrom(ip, nil)
			mu.Lock()
			defer mu.Unlock()
			if c != nil {
				conns = append(conns, c)
				return
			}
			codes[code]++
		}()
	}
	wg.Wait()
	return conns, codes
}

// TestSocketCapPerAddress: 200 websockets at once from one address get
// exactly MaxSocketsPerClient accepted and the rest 429, while another
// address still connects; a closed socket gives its slot back (issue 12,
// item 2).
func TestSocketCapPerAddress(t *testing.T) {
	const cap = 40
	e := MustOpenEnv(t, func(c *web.Config) {
		c.MaxSocketsPerClient = cap
		c.UpgradeRate, c.UpgradeBurst = 10000, 10000 // the cap, not the rate, is under test
	})
	conns, codes := e.dialMany("127.0.0.1", 200)
	if len(conns) != cap || codes[http.StatusTooManyRequests] != 200-cap {
		t.Fatalf("200 sockets from one address: %d accepted, refusals %v; want %d accepted, %d refused with 429",
			len(conns), codes, cap, 200-cap)
	}
	for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		c, code, err := e.dialFrom(ip, nil)
		if c == nil {
			t.Fatalf("dial from %s while 127.0.0.1 is at its cap: HTTP %d %v", ip, code, err)
		}
	}
	conns[0].Close(websocket.StatusNormalClosure, "")
	waitFor(t, 10*time.Second, "a slot of 127.0.0.1 freed by a close", func() bool {
		c, _, _ := e.dialFrom("127.0.0.1", nil)
		return c != nil
	})
	if c, code, _ := e.dialFrom("127.0.0.1", nil); c != nil || code != http.StatusTooManyRequests {
		t.Fatalf("dial over the cap again: HTTP %d, want 429", code)
	}
}

// TestGlobalCapExact: a burst of upgrades from many addresses never holds
// more than MaxClients websockets (issue 12, item 2: the cap is reserved
// before it is checked).
func TestGlobalCapExact(t *testing.T) {
	const max = 25
	e := MustOpenEnv(t, func(c *web.Config) {
		c.MaxClients = max
		c.UpgradeRate, c.UpgradeBurst = 10000, 10000
	})
	var mu sync.Mutex
	accepted, full := 0, 0
	var wg sync.WaitGroup
	for _, ip := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns, codes := e.dialMany(ip, 30)
			mu.Lock()
			accepted += len(conns)
			full += codes[http.StatusServiceUnavailable]
			mu.Unlock()
		}()
	}
	wg.Wait()
	if accepted != max || full != 120-max {
		t.Fatalf("120 upgrades against MaxClients %d: %d accepted, %d got 503", max, accepted, full)
	}
	waitFor(t, 10*time.Second, "every accepted socket served", func() bool { return e.srv.Stats().Clients == max })
}

// TestClientKey: X-Forwarded-For is believed only from trusted proxies,
// read from the right, its hops with or without a port; IPv6 clients are
// counted per /64.
func TestClientKey(t *testing.T) {
	proxies, err := web.ParsePrefixes("10.0.0.0/8, 192.0.2.7")
	if err != nil {
		t.Fatal(err)
	}
	trusting := MustOpenEnv(t, func(c *web.Config) { c.TrustedProxies = proxies })
	plain := MustOpenEnv(t, nil)
	tests := []struct {
		name   string
		srv    *env
		remote string
		xff    []string
		want   string
	}{
		{"no proxies: header ignored", plain, "10.1.2.3:5000", []string{"203.0.113.5"}, "10.1.2.3"},
		{"untrusted peer: header ignored", trusting, "198.51.100.1:5000", []string{"203.0.113.5"}, "198.51.100.1"},
		{"trusted proxy", trusting, "10.1.2.3:5000", []string{"203.0.113.5"}, "203.0.113.5"},
		{"bare address as a proxy", trusting, "192.0.2.7:5000", []string{"203.0.113.5"}, "203.0.113.5"},
		{"spoofed left part ignored", trusting, "10.1.2.3:5000", []string{"1.1.1.1, 203.0.113.5"}, "203.0.113.5"},
		{"chain of trusted proxies", trusting, "10.1.2.3:5000", []string{"203.0.113.5, 10.9.9.9", "10.8.8.8"}, "203.0.113.5"},
		{"garbage hop: the proxy stands for the client", trusting, "10.1.2.3:5000", []string{"203.0.113.5, nonsense"}, "10.1.2.3"},
		{"trusted proxy without header", trusting, "10.1.2.3:5000", nil, "10.1.2.3"},
		// Some proxies (Azure's, IIS's ARR) write each hop with its port.
		{"hop with a port", trusting, "10.1.2.3:5000", []string{"203.0.113.5:51234"}, "203.0.113.5"},
		{"trusted hop with a port", trusting, "10.1.2.3:5000", []string{"203.0.113.5:51234, 10.9.9.9:443"}, "203.0.113.5"},
		{"IPv6 hop with a port", trusting, "10.1.2.3:5000", []string{"[2001:db8:1:2::9]:80"}, "2001:db8:1:2::/64"},
		{"IPv6 hop in brackets", trusting, "10.1.2.3:5000", []string{"[2001:db8:1:2::9]"}, "2001:db8:1:2::/64"},
		{"loopback IPv6 hop with a port", trusting, "10.1.2.3:5000", []string{"[::1]:80"}, "::/64"},
		{"bare IPv6 hop", trusting, "10.1.2.3:5000", []string{"2001:db8:1:2::9"}, "2001:db8:1:2::/64"},
		{"garbled hop with a port: the proxy stands for the client", trusting, "10.1.2.3:5000", []string{"203.0.113.5, nonsense:80"}, "10.1.2.3"},
		{"port alone: the proxy stands for the client", trusting, "10.1.2.3:5000", []string{":80"}, "10.1.2.3"},
		{"IPv6 per /64", plain, "[2001:db8:1:2:aaaa::1]:5000", nil, "2001:db8:1:2::/64"},
		{"IPv4-mapped IPv6", plain, "[::ffff:198.51.100.1]:5000", nil, "198.51.100.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodGet, "http://localhost/", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := web.ClientKey(tt.srv.srv, r); got != tt.want {
				t.Fatalf("client key %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := web.ParsePrefixes("10.0.0.0/33"); err == nil {
		t.Fatal("ParsePrefixes accepted 10.0.0.0/33")
	}
	// A proxy named by its IPv4-mapped IPv6 form is the IPv4 one: peers
	// and hops are unmapped before they are looked up.
	mapped, err := web.ParsePrefixes("::ffff:10.0.0.0/104, ::ffff:192.0.2.7/128")
	if err != nil {
		t.Fatal(err)
	}
	viaMapped := MustOpenEnv(t, func(c *web.Config) { c.TrustedProxies = mapped })
	for _, remote := range []string{"10.1.2.3:5000", "192.0.2.7:5000", "[::ffff:10.1.2.3]:5000"} {
		r, _ := http.NewRequest(http.MethodGet, "http://localhost/", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-Forwarded-For", "203.0.113.5")
		if got := web.ClientKey(viaMapped.srv, r); got != "203.0.113.5" {
			t.Errorf("proxy %s trusted as ::ffff:10.0.0.0/104 or ::ffff:192.0.2.7/128: client key %q, want 203.0.113.5", remote, got)
		}
	}
}

// TestTrustedProxySocketCap: behind a trusted proxy each forwarded client
// has its own socket cap instead of sharing the proxy's.
func TestTrustedProxySocketCap(t *testing.T) {
	proxies, _ := web.ParsePrefixes("127.0.0.1")
	e := MustOpenEnv(t, func(c *web.Config) {
		c.TrustedProxies = proxies
		c.MaxSocketsPerClient = 2
	})
	from := func(client string) http.Header { return http.Header{"X-Forwarded-For": {client}} }
	for range 2 {
		if c, code, err := e.dialFrom("127.0.0.1", from("203.0.113.1")); c == nil {
			t.Fatalf("dial for 203.0.113.1: HTTP %d %v", code, err)
		}
	}
	if c, code, _ := e.dialFrom("127.0.0.1", from("203.0.113.1")); c != nil || code != http.StatusTooManyRequests {
		t.Fatalf("third socket of 203.0.113.1: HTTP %d, want 429", code)
	}
	if c, code, err := e.dialFrom("127.0.0.1", from("203.0.113.2")); c == nil {
		t.Fatalf("another client behind the same proxy: HTTP %d %v", code, err)
	}
}

// TestRequestsPerClientCap: a client with MaxRequestsPerClient plain
// requests in flight gets 429 for the next one; other addresses do not
// (issue 12, item 1). The liveness and readiness probes are not capped:
// they share their address with the load they watch.
func TestRequestsPerClientCap(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	e := MustOpenEnv(t, func(c *web.Config) {
		c.MaxRequestsPerClient = 2
		c.Status = func(ctx context.Context) (feed.Status, error) { // holds /api/status in flight
			select {
			case <-release:
				return feed.Status{}, nil
			case <-ctx.Done():
				return feed.Status{}, ctx.Err()
			}
		}
		c.Ready = func(context.Context) error { return nil }
	})
	getFrom := func(ip, path string) (int, error) {
		hc := &http.Client{Transport: &http.Transport{
			DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext,
		}}
		resp, err := hc.Get(e.url(path))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); getFrom("127.0.0.1", "/api/status") }()
	}
	waitFor(t, 10*time.Second, "two requests in flight", func() bool { return e.srv.Stats().Requests == 2 })
	if code, err := getFrom("127.0.0.1", "/"); code != http.StatusTooManyRequests {
		t.Fatalf("third request in flight from one address: %d %v, want 429", code, err)
	}
	for _, probe := range []string{"/healthz", "/readyz"} {
		if code, err := getFrom("127.0.0.1", probe); code != http.StatusOK {
			t.Fatalf("%s from the capped address: %d %v, want 200", probe, code, err)
		}
	}
	if code, err := getFrom("127.0.0.2", "/"); code != http.StatusOK {
		t.Fatalf("request from another address: %d %v, want 200", code, err)
	}
	free()
	wg.Wait()
	if code, err := getFrom("127.0.0.1", "/"); code != http.StatusOK {
		t.Fatalf("after the slow requests ended: %d %v, want 200", code, err)
	}
}
