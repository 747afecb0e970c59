package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

// bigGame stores n chat lines of game, in batches. One line is rendered
// and its HTML shared by all: rendering 30,000 under -race is the slow
// part, and the web serves what is stored whatever it says.
func (e *env) bigGame(game string, n int) []string {
	e.tb.Helper()
	g := e.gen(game)
	g.proto = g.chats(e.tb, 1)[0]
	proto := g.proto
	var ids []string
	for len(ids) < n {
		evs := make([]store.Event, min(2000, n-len(ids)))
		for i := range evs {
			ev := proto
			ev.EvtID = g.m.Next(time.Now())
			evs[i] = ev
		}
		e.upsert(evs...)
		ids = append(ids, evtIDs(evs)...)
	}
	return ids
}

// TestTimelineBounded: a 30,000-line game's replay data comes in pages of
// at most TimelineLines entries and about TimelineBytes, which together
// are the whole game in EVT id order, each line once; a client that sends
// requests and never reads is cut off within ResponseTimeout (issue 12,
// item 1).
func TestTimelineBounded(t *testing.T) {
	e := MustOpenEnv(t, nil)
	want := e.bigGame("big", 30000)
	t.Run("pages", func(t *testing.T) {
		const maxLines, maxBytes = 1000, 1 << 20 // the defaults
		var got []string
		after, pages := "", 0
		for {
			path := "/games/big/timeline.json"
			if after != "" {
				path += "?after=" + after
			}
			resp, body := e.get(path)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
			}
			var p web.TimelinePage
			if err := json.Unmarshal([]byte(body), &p); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if len(p.Entries) > maxLines || len(body) > maxBytes+16<<10 {
				t.Fatalf("%s: %d entries, %d bytes: over the bound", path, len(p.Entries), len(body))
			}
			for _, x := range p.Entries {
				got = append(got, x.ID)
			}
			pages++
			if p.Next == "" {
				break
			}
			after = p.Next
		}
		if !eq(got, want) {
			t.Fatalf("paged timeline: %d lines in %d pages, want the game's %d lines in order", len(got), pages, len(want))
		}
		if resp, _ := e.get("/games/big/timeline.json?after=nonsense"); resp.StatusCode != 400 {
			t.Fatalf("after=nonsense: %d, want 400", resp.StatusCode)
		}
	})
	t.Run("byte bound", func(t *testing.T) {
		small := MustOpenEnv(t, func(c *web.Config) { c.Store, c.TimelineBytes = e.db, 8<<10 })
		resp, body := small.get("/games/big/timeline.json")
		var p web.TimelinePage
		if err := json.Unmarshal([]byte(body), &p); err != nil || resp.StatusCode != 200 {
			t.Fatalf("small pages: %d %v", resp.StatusCode, err)
		}
		if len(p.Entries) == 0 || len(body) > 8<<10+2<<10 || p.Next != p.Entries[len(p.Entries)-1].ID {
			t.Fatalf("TimelineBytes 8 KiB: %d entries in %d bytes, next %q", len(p.Entries), len(body), p.Next)
		}
	})
	t.Run("non-reading client cut off", func(t *testing.T) {
		// 30 pipelined pages, about 15 MB, to a client with a 4 KiB
		// receive buffer that never reads: the socket buffers fill, a
		// write blocks, and the write deadline must end it.
		const timeout = 2 * time.Second
		slow := MustOpenEnv(t, func(c *web.Config) { c.Store, c.ResponseTimeout = e.db, timeout })
		d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
			})
			return errors.Join(err, serr)
		}}
		conn, err := d.Dial("tcp", slow.srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var req strings.Builder
		for range 30 {
			fmt.Fprintf(&req, "GET /games/big/timeline.json HTTP/1.1\r\nHost: %s\r\n\r\n", slow.srv.Addr())
		}
		io.WriteString(conn, req.String())
		waitFor(t, 10*time.Second, "the connection served", func() bool { return slow.srv.Stats().Conns == 1 })
		// 30 pages take a few seconds to render under -race; each request
		// has its own deadline, so the bound is per page plus the timeout.
		waitFor(t, 30*time.Second, "the non-reading client cut off", func() bool {
			st := slow.srv.Stats()
			return st.Conns == 0 && st.Requests == 0
		})
		// What the buffers held arrives, then the end: never all 30 pages.
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := io.Copy(io.Discard, conn)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open after the write deadline (%d bytes read)", n)
		}
		if full := int64(30 * 1000 * len(e.gens["big"].proto.HTML)); n >= full {
			t.Fatalf("cut-off client read %d bytes, all 30 pages (over %d)", n, full)
		}
	})
}

// TestForeignHostRefused: a websocket or admin request whose Host is not a
// public host is refused, even with a matching Origin (DNS rebinding);
// pages do not echo the Host (issue 12, item 3).
func TestForeignHostRefused(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PublicHosts = append(web.DefaultPublicHosts(c.Addr), "feed.example.com") })
	_, port, _ := net.SplitHostPort(e.srv.Addr())
	dial := func(host string) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, e.wsURL("g1", 0), &websocket.DialOptions{
			Host: host, HTTPHeader: http.Header{"Origin": {"http://" + host}},
		})
		if err == nil {
			c.CloseNow()
			return http.StatusSwitchingProtocols, nil
		}
		if resp == nil {
			return 0, err
		}
		return resp.StatusCode, err
	}
	tests := []struct {
		host string
		want int
	}{
		{"evil.example", http.StatusMisdirectedRequest},
		{"evil.example:" + port, http.StatusMisdirectedRequest},
		{"127.0.0.1.evil.example:" + port, http.StatusMisdirectedRequest},
		{"localhost:" + port, http.StatusSwitchingProtocols},
		{"127.0.0.1:" + port, http.StatusSwitchingProtocols},
		{"[::1]:" + port, http.StatusSwitchingProtocols},
		{"FEED.example.com.", http.StatusSwitchingProtocols},
	}
	for _, tt := range tests {
		if got, err := dial(tt.host); got != tt.want {
			t.Errorf("websocket with Host %s: HTTP %d (%v), want %d", tt.host, got, err, tt.want)
		}
	}
	for _, path := range []string{"/status", "/api/status", "/metrics", "/debug/pprof/"} {
		if resp, _ := e.get(path, "Host", "evil.example"); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("%s with Host evil.example: %d, want 421", path, resp.StatusCode)
		}
		if resp, _ := e.get(path); resp.StatusCode == http.StatusMisdirectedRequest || resp.StatusCode == http.StatusUnauthorized {
			t.Errorf("%s on the listen address: %d, want it served", path, resp.StatusCode)
		}
	}
	e.upsert(e.gen("g1").chats(t, 1)...)
	for _, path := range []string{"/", "/games/g1", "/games/g1/replay", "/games/g1/timeline.json"} {
		if _, body := e.get(path, "Host", "evil.example"); strings.Contains(body, "evil.example") {
			t.Errorf("%s echoes the foreign Host", path)
		}
	}
}

// TestDefaultPortsAsNoPort: behind a TLS proxy, a public host or an allowed
// origin given with its scheme's default port (feed.example.com:443) means
// the same as without it, and so does a Host or an Origin that names it:
// browsers leave the default port out of both, and some proxies write it
// into the Host. Other ports still have to match.
func TestDefaultPortsAsNoPort(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) {
		c.PublicHosts = []string{"feed.example.com:443", "plain.example.com:80", "any.example.com"}
		c.AllowedOrigins = []string{"app.example.com:443", "https://scheme.example.com:443"}
	})
	dial := func(host, origin string) int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, e.wsURL("g1", 0), &websocket.DialOptions{
			Host: host, HTTPHeader: http.Header{"Origin": {origin}},
		})
		if err == nil {
			c.CloseNow()
			return http.StatusSwitchingProtocols
		}
		if resp == nil {
			t.Fatalf("dial with Host %s, Origin %s: %v", host, origin, err)
		}
		return resp.StatusCode
	}
	tests := []struct {
		host, origin string
		want         int
	}{
		// The Host as browsers send it, to a public host listed with :443.
		{"feed.example.com", "https://feed.example.com", http.StatusSwitchingProtocols},
		{"plain.example.com", "http://plain.example.com", http.StatusSwitchingProtocols},
		// A proxy that writes the port into the Host: the Origin is the
		// same origin.
		{"feed.example.com:443", "https://feed.example.com", http.StatusSwitchingProtocols},
		{"any.example.com:443", "https://any.example.com", http.StatusSwitchingProtocols},
		{"any.example.com:80", "http://any.example.com", http.StatusSwitchingProtocols},
		{"any.example.com", "https://any.example.com:443", http.StatusSwitchingProtocols},
		// Allowed origins listed with the default port.
		{"feed.example.com", "https://app.example.com", http.StatusSwitchingProtocols},
		{"feed.example.com", "https://scheme.example.com", http.StatusSwitchingProtocols},
		// Other ports and schemes are still told apart.
		{"feed.example.com:8443", "https://feed.example.com:8443", http.StatusMisdirectedRequest},
		{"plain.example.com:443", "https://plain.example.com", http.StatusMisdirectedRequest},
		{"any.example.com", "https://any.example.com:8443", http.StatusForbidden},
		{"any.example.com:8443", "https://any.example.com", http.StatusForbidden},
		{"feed.example.com", "http://app.example.com", http.StatusForbidden},
		{"feed.example.com", "https://app.example.com:8443", http.StatusForbidden},
		{"feed.example.com", "http://scheme.example.com", http.StatusForbidden},
	}
	for _, tt := range tests {
		if got := dial(tt.host, tt.origin); got != tt.want {
			t.Errorf("websocket with Host %s, Origin %s: HTTP %d, want %d", tt.host, tt.origin, got, tt.want)
		}
	}
	if resp, _ := e.get("/api/status", "Host", "feed.example.com"); resp.StatusCode == http.StatusMisdirectedRequest {
		t.Errorf("/api/status with Host feed.example.com (public host feed.example.com:443): 421")
	}
}

// TestPublicHostsReadAsHosts: a PublicHosts entry is read as a Host header
// is, by one parser, so that what CheckPublicHosts accepts is what the
// server matches, and web.Open refuses what it refuses. The check read
// entries with net.SplitHostPort and rules of its own, the server with
// splitHostPort, comparing text: "2001:db8:0:0:0:0:0:1" passed the check as
// an IPv6 address and the Host browsers send for it, [2001:db8::1], got
// 421; "[feed.example.com]" passed as a name in brackets, which the server
// read as feed.example.com, as it read a Host "[feed.example.com]" or
// "feed.example.com:abc".
func TestPublicHostsReadAsHosts(t *testing.T) {
	entries := []struct{ entry, host string }{
		{"2001:db8:0:0:0:0:0:1", "[2001:db8::1]"},
		{"2001:DB8:0:0::2", "[2001:db8::2]:8080"},
		{"[2001:db8:0::3]:8443", "[2001:db8::3]:8443"},
		{"FEED.example.com.", "feed.example.com:8080"},
		{"*.example.org:443", "a.example.org"},
	}
	var list []string
	for _, tt := range entries {
		list = append(list, tt.entry)
	}
	if err := web.CheckPublicHosts(list); err != nil {
		t.Fatalf("CheckPublicHosts(%q): %v", list, err)
	}
	e := MustOpenEnv(t, func(c *web.Config) { c.PublicHosts = list })
	// Past the Host check, a stream asked for without a cursor is a 400.
	for _, tt := range entries {
		if resp, _ := e.get("/games/g1/events", "Host", tt.host); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("Host %s, public host %s: %d, want 400 (past the Host check)", tt.host, tt.entry, resp.StatusCode)
		}
	}
	for _, host := range []string{"[2001:db8::3]", "[2001:db8::4]", "[feed.example.com]", "feed.example.com:abc", "b.example.org:8443"} {
		if resp, _ := e.get("/games/g1/events", "Host", host); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("Host %s: %d, want 421", host, resp.StatusCode)
		}
	}
	for _, entry := range []string{"[feed.example.com]", "feed.example.com]", "[feed.example.com]:8080", "[192.0.2.1]", "[2001:db8::1", "*.", "feed.example.com:080"} {
		if err := web.CheckPublicHosts([]string{entry}); err == nil {
			t.Errorf("CheckPublicHosts(%q) passed", entry)
		}
		srv, err := web.Open(web.Config{Addr: "127.0.0.1:0", Store: e.db, Logger: testLogger(), PublicHosts: []string{entry}})
		if err == nil {
			srv.Close()
			t.Errorf("web.Open with public host %q served", entry)
		}
	}
}

// TestAdminAccess: open admin only on loopback, the Bearer scheme required
// and case-insensitive, /readyz's details for admins only (issue 12,
// item 4).
func TestAdminAccess(t *testing.T) {
	_, err := web.Open(web.Config{Addr: "0.0.0.0:0", Store: MustOpenStore(t)})
	if !errors.Is(err, web.ErrAdminExposed) {
		t.Fatalf("open on 0.0.0.0 without a token: %v, want ErrAdminExposed", err)
	}

	const token = "s3cret-token"
	down := errors.New("redis: dial tcp 10.9.8.7:6379: connect: connection refused")
	e := MustOpenEnv(t, func(c *web.Config) {
		c.Addr, c.AdminToken = "0.0.0.0:0", token
		c.Ready = func(context.Context) error { return down }
	})
	_, port, _ := net.SplitHostPort(e.srv.Addr())
	e.srv = nil // reach it on loopback, by its port
	base := "http://127.0.0.1:" + port
	get := func(path string, hdr ...string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		name string
		path string
		hdr  []string
		want int
	}{
		{"no token", "/api/status", nil, 401},
		{"Bearer", "/api/status", []string{"Authorization", "Bearer " + token}, 503}, // no status source: 503 with JSON
		{"lower-case bearer", "/metrics", []string{"Authorization", "bearer " + token}, 200},
		{"upper-case BEARER", "/metrics", []string{"Authorization", "BEARER " + token}, 200},
		{"bare token", "/metrics", []string{"Authorization", token}, 401},
		{"other scheme", "/metrics", []string{"Authorization", "Basic " + token}, 401},
		{"wrong token", "/metrics", []string{"Authorization", "Bearer nope"}, 401},
		{"query token", "/status?token=" + token, nil, 200},
		{"bad header beats a good query", "/metrics?token=" + token, []string{"Authorization", token}, 401},
	}
	for _, tt := range tests {
		if got, body := get(tt.path, tt.hdr...); got != tt.want {
			t.Errorf("%s: %s: %d, want %d (%s)", tt.name, tt.path, got, tt.want, strings.TrimSpace(body))
		}
	}
	code, body := get("/readyz")
	if code != 503 || body != "not ready\n" {
		t.Errorf("public /readyz: %d %q, want 503 \"not ready\\n\" without details", code, body)
	}
	code, body = get("/readyz", "Authorization", "Bearer "+token)
	if code != 503 || !strings.Contains(body, "connection refused") {
		t.Errorf("admin /readyz: %d %q, want the reason", code, body)
	}

	// On loopback without a token admin is open, and so are the details.
	lo := MustOpenEnv(t, func(c *web.Config) { c.Ready = func(context.Context) error { return down } })
	if resp, _ := lo.get("/status"); resp.StatusCode != 200 {
		t.Errorf("loopback /status without a token: %d, want 200", resp.StatusCode)
	}
	if _, body := lo.get("/readyz"); !strings.Contains(body, "connection refused") {
		t.Errorf("loopback /readyz: %q, want the reason", body)
	}
}

// TestTimelineBytesEscapes: a page of timeline.json stays about
// TimelineBytes however much its lines grow when JSON-escaped. Chat text
// may hold control characters (six bytes each in JSON, one in the HTML)
// and U+2028 (six bytes, three in the HTML); the bound was on an estimate
// of the HTML plus an eighth, so a player's chat made pages of several
// times the bound.
func TestTimelineBytesEscapes(t *testing.T) {
	const maxBytes = 64 << 10
	e := MustOpenEnv(t, func(c *web.Config) { c.TimelineBytes = maxBytes })
	g := e.gen("noisy")
	text := strings.Repeat("\x01", 200) + strings.Repeat("\u2028", 80) // 280 runes, MaxChatRunes
	evs := make([]store.Event, 300)
	for i := range evs {
		evs[i] = g.ev(t, "chat", "player", "ada", "text", text)
	}
	e.upsert(evs...)
	var got []string
	for after := ""; ; {
		path := "/games/noisy/timeline.json"
		if after != "" {
			path += "?after=" + after
		}
		resp, body := e.get(path)
		var p web.TimelinePage
		if err := json.Unmarshal([]byte(body), &p); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, err)
		}
		if len(body) > maxBytes+2<<10 {
			t.Fatalf("%s: %d entries in %d bytes, TimelineBytes %d", path, len(p.Entries), len(body), maxBytes)
		}
		for _, x := range p.Entries {
			got = append(got, x.ID)
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if !eq(got, evtIDs(evs)) {
		t.Fatalf("paged timeline: %d lines, want the game's %d in order", len(got), len(evs))
	}
}

// TestProfileWithinResponseTimeout: every admin response has
// ResponseTimeout to be written, and pprof checks a duration only against
// the server's WriteTimeout, which is unset. A CPU profile asked without
// ?seconds= (pprof's 30 s, against the default 30 s deadline) was always
// cut off: it now takes the longest that fits, and a longer duration asked
// for is refused with 400 rather than cut off.
func TestProfileWithinResponseTimeout(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.ResponseTimeout = 3 * time.Second })
	client := &http.Client{Timeout: 15 * time.Second}
	get := func(path string) (int, []byte, error) {
		resp, err := client.Get(e.url(path))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, body, err
	}
	code, body, err := get("/debug/pprof/profile")
	if err != nil || code != http.StatusOK || len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
		t.Fatalf("CPU profile without seconds: HTTP %d, %d bytes, %v; want a whole (gzipped) profile", code, len(body), err)
	}
	for _, path := range []string{"/debug/pprof/profile?seconds=5", "/debug/pprof/trace?seconds=3", "/debug/pprof/heap?seconds=30"} {
		code, body, err := get(path)
		if err != nil || code != http.StatusBadRequest || !strings.Contains(string(body), "response-timeout") {
			t.Errorf("%s with a 3 s deadline: HTTP %d %q %v; want 400 naming -response-timeout", path, code, body, err)
		}
	}
	for _, path := range []string{"/debug/pprof/trace?seconds=0.5", "/debug/pprof/heap?seconds=1", "/debug/pprof/goroutine?debug=1"} {
		if code, body, err := get(path); err != nil || code != http.StatusOK || len(body) == 0 {
			t.Errorf("%s: HTTP %d, %d bytes, %v; want it served", path, code, len(body), err)
		}
	}
}

// TestProfileSecondsAsPprofReadsThem: pprof reads ?seconds= its own way
// (r.FormValue, so a POSTed form's value first; a CPU profile as a whole
// number, taking its 30 s for 0, a negative, a fraction or no number at
// all). A value that TestProfileWithinResponseTimeout's check let through
// on the query's reading still ran a 30 s profile against a 3 s deadline,
// cut off: it is now refused with 400 saying what fits.
func TestProfileSecondsAsPprofReadsThem(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.ResponseTimeout = 3 * time.Second })
	// Bounded, so that the test fails rather than waiting for the
	// 30 s profile a refused value once ran.
	client := &http.Client{Timeout: 15 * time.Second}
	for _, tc := range []struct {
		name, query, form string
	}{
		{name: "zero", query: "seconds=0"},
		{name: "negative", query: "seconds=-1"},
		{name: "fraction", query: "seconds=1.5"},
		{name: "exponent", query: "seconds=1e0"},
		{name: "no number", query: "seconds=abc"},
		{name: "form over query", query: "seconds=1", form: "seconds=60"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// In parallel: a CPU profile run by a value let through holds
			// the process's one profiler, which the others then find busy.
			t.Parallel()
			method, body := http.MethodGet, io.Reader(nil)
			if tc.form != "" {
				method, body = http.MethodPost, strings.NewReader(tc.form)
			}
			req, err := http.NewRequest(method, e.url("/debug/pprof/profile?"+tc.query), body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.form != "" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s ?%s %s: %v; want 400 naming -response-timeout", method, tc.query, tc.form, err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "response-timeout") {
				t.Errorf("%s ?%s %s: HTTP %d %q %v; want 400 naming -response-timeout", method, tc.query, tc.form, resp.StatusCode, b, err)
			}
		})
	}
}
