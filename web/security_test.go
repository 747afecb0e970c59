package web_test

import (
	"context"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/web"
)

const wantCSP = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

func TestWebsocketOrigin(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		origin  string // "" sends none; HOST is replaced by the server's address
		wantOK  bool
	}{
		{"no origin (not a browser)", nil, "", true},
		{"same host", nil, "http://HOST", true},
		{"foreign origin", nil, "http://evil.example", false},
		{"foreign origin on the same host name, other port", nil, "http://127.0.0.1:1", false},
		{"allowed by pattern", []string{"*.example.com"}, "https://feed.example.com", true},
		{"not matching the pattern", []string{"*.example.com"}, "https://example.org", false},
		// Not an origin as a browser writes one: refused even where its
		// host part would pass.
		{"userinfo", nil, "http://user@HOST", false},
		{"a path", nil, "http://HOST/", false},
		{"a query", []string{"*.example.com"}, "https://feed.example.com?x", false},
		{"null (a sandboxed frame)", []string{"*"}, "null", false},
		{"any origin allowed", []string{"*"}, "https://elsewhere.example", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := MustOpenEnv(t, func(c *web.Config) { c.AllowedOrigins = tt.allowed })
			h := http.Header{}
			if tt.origin != "" {
				h.Set("Origin", strings.ReplaceAll(tt.origin, "HOST", e.srv.Addr()))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, resp, err := websocket.Dial(ctx, e.wsURL("g1", 0), &websocket.DialOptions{HTTPHeader: h})
			if tt.wantOK {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				c.CloseNow()
				return
			}
			if err == nil {
				c.CloseNow()
				t.Fatal("dial succeeded, want the origin refused")
			}
			if resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("dial: %v (%v), want 403", err, resp)
			}
		})
	}
}

func TestSecurityHeaders(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 2)...)
	scriptRe := regexp.MustCompile(`<script[^>]*>`)
	for _, path := range []string{"/", "/games/g1", "/games/g1/replay", "/status", "/games/nope_"} {
		resp, body := e.get(path)
		if got := resp.Header.Get("Content-Security-Policy"); got != wantCSP {
			t.Errorf("%s: CSP %q, want %q", path, got, wantCSP)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", path, got)
		}
		if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%s: X-Frame-Options %q", path, got)
		}
		for _, tag := range scriptRe.FindAllString(body, -1) {
			if !strings.Contains(tag, ` src="/static/`) {
				t.Errorf("%s: inline or foreign script %s", path, tag)
			}
		}
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			t.Errorf("%s: page references an outside URL", path)
		}
	}
}

// Hostile chat text reaches the page and the frames only as inert text.
func TestHostileTextEscaped(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	w := e.dial("g1", 0)
	w.next()
	hostile := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	e.upsert(g.ev(t, event.KindChat, "player", `"><b>eve`, "text", hostile))
	f := w.lines(1)[0]
	_, page := e.get("/games/g1")
	for where, html := range map[string]string{"frame": f.HTML, "page": page} {
		if strings.Contains(html, "<script>alert") || strings.Contains(html, "<img src=x") || strings.Contains(html, `"><b>eve`) {
			t.Errorf("%s carries live markup from untrusted text", where)
		}
		if !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s lacks the escaped chat text", where)
		}
	}
}

func TestAdminToken(t *testing.T) {
	tests := []struct {
		name   string
		token  string // server's AdminToken
		path   string
		header string // Authorization
		want   int
	}{
		{"open without a token", "", "/status", "", 200},
		{"metrics open without a token", "", "/metrics", "", 200},
		{"status refused", "s3cret", "/status", "", 401},
		{"api refused", "s3cret", "/api/status", "", 401},
		{"status fragment refused", "s3cret", "/fragments/status", "", 401},
		{"status fragment with bearer", "s3cret", "/fragments/status", "Bearer s3cret", 200},
		{"metrics refused", "s3cret", "/metrics", "", 401},
		{"wrong bearer", "s3cret", "/status", "Bearer nope", 401},
		{"wrong query token", "s3cret", "/status?token=nope", "", 401},
		{"bearer", "s3cret", "/status", "Bearer s3cret", 200},
		{"query token", "s3cret", "/status?token=s3cret", "", 200},
		{"metrics with bearer", "s3cret", "/metrics", "Bearer s3cret", 200},
		{"profiles refused", "s3cret", "/debug/pprof/", "", 401},
		{"a named profile refused", "s3cret", "/debug/pprof/heap", "", 401},
		{"a trace refused", "s3cret", "/debug/pprof/trace?seconds=1", "", 401},
		{"profiles with bearer", "s3cret", "/debug/pprof/goroutine?debug=1", "Bearer s3cret", 200},
		{"game pages stay public", "s3cret", "/games/g1", "", 200},
		{"health stays public", "s3cret", "/healthz", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := MustOpenEnv(t, func(c *web.Config) { c.AdminToken = tt.token })
			var hdr []string
			if tt.header != "" {
				hdr = []string{"Authorization", tt.header}
			}
			resp, _ := e.get(tt.path, hdr...)
			if resp.StatusCode != tt.want {
				t.Fatalf("GET %s: %d, want %d", tt.path, resp.StatusCode, tt.want)
			}
		})
	}
}

func TestBadGameNameNotFound(t *testing.T) {
	e := MustOpenEnv(t, nil)
	for _, path := range []string{
		"/games/Bad",
		"/games/-leading-dash",
		"/games/under_score",
		"/games/" + strings.Repeat("a", 65),
		"/games/UPPER/live?after=0",
		"/games/bad%20name/older?before=evt_01HZY8X6B7J1N7RQ2M1S8VKT4D",
		"/games/x.y/replay",
		"/games/x.y/timeline.json",
	} {
		resp, _ := e.get(path)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}

func TestLiveBadCursor(t *testing.T) {
	e := MustOpenEnv(t, nil)
	for _, q := range []string{"", "?after=", "?after=-1", "?after=abc"} {
		resp, _ := e.get("/games/g1/live" + q)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("live%s: %d, want 400", q, resp.StatusCode)
		}
	}
}

func TestUpgradeRateLimit(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.UpgradeRate = 0.001; c.UpgradeBurst = 3 })
	for range 3 {
		e.dial("g1", 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, e.wsURL("g1", 0), nil)
	if err == nil {
		c.CloseNow()
		t.Fatal("fourth upgrade accepted, want 429")
	}
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("fourth upgrade: %v (%v), want 429", err, resp)
	}
}

// Handshakes refused for their Origin do not spend the address's upgrade
// tokens: another site's page, opened behind the same NAT, must not lock
// the players out.
func TestRefusedOriginSpendsNoUpgrade(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.UpgradeRate = 0.001; c.UpgradeBurst = 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 5 {
		h := http.Header{"Origin": {"http://evil.example"}}
		c, resp, err := websocket.Dial(ctx, e.wsURL("g1", 0), &websocket.DialOptions{HTTPHeader: h})
		if err == nil {
			c.CloseNow()
			t.Fatal("a foreign Origin's handshake accepted")
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("foreign Origin: %v (%v), want 403", err, resp)
		}
	}
	for range 3 {
		e.dial("g1", 0)
	}
}

func TestRequestBodyLimit(t *testing.T) {
	e := MustOpenEnv(t, nil)
	req, err := http.NewRequest(http.MethodGet, e.url("/"), strings.NewReader(strings.Repeat("x", 64<<10)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("64 KiB body: %d, want 413", resp.StatusCode)
	}
}

// TestAdminResponsesNotStored: operator responses must not be stored by a
// browser or proxy cache (a /status?token=… URL would keep the token on
// disk): the admin guard says Cache-Control: no-store, and the handlers
// used to overwrite it with no-cache.
func TestAdminResponsesNotStored(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.AdminToken = "s3cret" })
	for _, tc := range []struct{ path, auth string }{
		{"/status?token=s3cret", ""},
		{"/status", "Bearer s3cret"},
		{"/fragments/status", "Bearer s3cret"},
		{"/api/status", "Bearer s3cret"},
		{"/metrics", "Bearer s3cret"},
	} {
		var hdr []string
		if tc.auth != "" {
			hdr = []string{"Authorization", tc.auth}
		}
		resp, _ := e.get(tc.path, hdr...)
		if resp.StatusCode == http.StatusUnauthorized {
			t.Fatalf("GET %s: 401", tc.path)
		}
		if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
			t.Errorf("GET %s: Cache-Control %q, want no-store", tc.path, cc)
		}
	}
}

// TestOpenAdminNotForProxiedClients: a loopback renderer without an admin
// token behind a same-host proxy (the deployment docs/operations.md shows)
// kept its admin pages open to anyone the proxy forwarded. A request the
// trusted proxy says came from a remote client is not a local operator's.
func TestOpenAdminNotForProxiedClients(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) {
		c.PublicHosts = []string{"feed.example.com", "127.0.0.1"}
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	for _, p := range []string{"/status", "/api/status", "/metrics", "/debug/pprof/cmdline"} {
		resp, _ := e.get(p, "Host", "feed.example.com", "X-Forwarded-For", "203.0.113.9")
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s from 203.0.113.9 via the proxy: %d, want 401", p, resp.StatusCode)
		}
		// The local operator, straight to the listener, still gets in.
		resp, _ = e.get(p)
		if resp.StatusCode == http.StatusUnauthorized {
			t.Errorf("GET %s from loopback: 401, want it open", p)
		}
	}
}

// TestCmdlineHidesSecrets: /debug/pprof/cmdline, which the admin token
// opens as it opens /metrics (a scraper holds it), gives the command line
// with a Redis URL's password and the admin token written xxxxx. It gave
// them as they were: a renderer started with -redis redis://:PASS@host
// (flags, not the environment the docs prefer) handed the Redis password,
// write access to every stream, to whoever could read its metrics. The
// token is hidden as the value of a flag in SecretFlags, in every form the
// flag package takes (TestCmdlineHidesSecretFlags runs a renderer), not
// by its value: an argument that holds the same text is not one.
func TestCmdlineHidesSecrets(t *testing.T) {
	const token = "t0ken-of-the-admin"
	args := os.Args
	os.Args = []string{"renderer", "-redis", "redis://feed:s3cret@redis.internal:6379/0", "-admin-token=old",
		"--admin-token", "older", "--admin-token=oldest", "-admin-token", token, "-http", "127.0.0.1:0", "-consumer", "admin-token"}
	t.Cleanup(func() { os.Args = args })
	e := MustOpenEnv(t, func(c *web.Config) { c.AdminToken, c.SecretFlags = token, []string{"admin-token"} })
	resp, body := e.get("/debug/pprof/cmdline", "Authorization", "Bearer "+token)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("cmdline: %d %s", resp.StatusCode, body)
	}
	want := "renderer\x00-redis\x00redis://feed:xxxxx@redis.internal:6379/0\x00-admin-token=xxxxx\x00" +
		"--admin-token\x00xxxxx\x00--admin-token=xxxxx\x00-admin-token\x00xxxxx\x00-http\x00127.0.0.1:0\x00-consumer\x00admin-token"
	if body != want {
		t.Errorf("cmdline %q, want %q", body, want)
	}
}
