package web_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/codemojex/feed/static"
	"github.com/codemojex/feed/web"
)

// TestMethodNotAllowedNamesHead: a method no route of a path takes is a
// 405 whose Allow names every method the path serves (RFC 9110, section
// 15.5.6), HEAD too: every GET route answers HEAD (chi's GetHead), where
// chi's own 405 said "Allow: GET" alone. The HEAD it names is served.
func TestMethodNotAllowedNamesHead(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.AdminToken = "s3cret" })
	e.upsert(e.gen("g1").chats(t, 3)...)
	do := func(t *testing.T, method, path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, e.url(path), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct {
		path string
		head int // HEAD's status
	}{
		{"/", http.StatusOK},
		{"/games/g1", http.StatusOK},
		{"/games/g1/older?before=evt_01M9655YJ4ABYZR1S1GCH2EVRN", http.StatusOK},
		{"/games/g1/timeline.json", http.StatusOK},
		{static.Path("app.js"), http.StatusOK},
		{"/healthz", http.StatusOK},
		{"/readyz", http.StatusOK},
		{"/status", http.StatusOK},
		{"/api/status", http.StatusServiceUnavailable}, // no status source here
	} {
		t.Run(tc.path, func(t *testing.T) {
			for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions} {
				resp := do(t, m, tc.path)
				if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
					t.Errorf("%s %s: HTTP %d, Allow %q; want 405, Allow \"GET, HEAD\"", m, tc.path, resp.StatusCode, resp.Header.Values("Allow"))
				}
			}
			if resp := do(t, http.MethodHead, tc.path); resp.StatusCode != tc.head {
				t.Errorf("HEAD %s: HTTP %d, want %d", tc.path, resp.StatusCode, tc.head)
			}
		})
	}
}

// TestLiveAllowsGetAlone: /live takes a websocket handshake, a GET and
// nothing else (RFC 6455, 4.1), so every other method there is a 405 whose
// Allow says GET alone, from the router (POST, PUT, DELETE, OPTIONS) and
// from the route that GetHead hands a HEAD to alike, with the handshake's
// fields or without, and whatever its cursor. Until 6 Dec 2026 the
// router's 405 said "Allow: GET, HEAD", a HEAD handshake's "Allow: GET",
// and a HEAD without the fields was a 426. /events, which serves a HEAD
// its head, still names both.
func TestLiveAllowsGetAlone(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 1)...)
	handshake := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
		"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	do := func(method, path string, hdr []string) *http.Response {
		t.Helper()
		resp, _ := e.send(method, path, hdr...)
		return resp
	}
	for _, m := range []string{http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions} {
		for _, path := range []string{"/games/g1/live?after=0", "/games/g1/live", "/games/g1/live?after=-0"} {
			for _, hdr := range [][]string{nil, handshake} {
				resp := do(m, path, hdr)
				if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET" {
					t.Errorf("%s %s (handshake fields: %t): HTTP %d, Allow %q; want 405, Allow \"GET\"",
						m, path, hdr != nil, resp.StatusCode, resp.Header.Values("Allow"))
				}
			}
		}
		if m == http.MethodHead {
			if resp := do(m, "/games/g1/events?after=0", nil); resp.StatusCode != http.StatusOK {
				t.Errorf("HEAD /events: HTTP %d, want 200", resp.StatusCode)
			}
			continue
		}
		if resp := do(m, "/games/g1/events?after=0", nil); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /events: HTTP %d, Allow %q; want 405, Allow \"GET, HEAD\"", m, resp.StatusCode, resp.Header.Values("Allow"))
		}
	}
	// The GET it names is served.
	e.dial("g1", 0).c.CloseNow()
}
