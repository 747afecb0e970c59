package web_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/codemojex/feed/static"
)

// getEncoded fetches path asking for gzip itself, so that the transport
// hands the body over as sent; it returns the response and the body as
// sent and decoded.
func (e *env) getEncoded(path string) (resp *http.Response, sent int, body string) {
	e.tb.Helper()
	req, err := http.NewRequest(http.MethodGet, e.url(path), nil)
	if err != nil {
		e.tb.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		e.tb.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.tb.Fatal(err)
	}
	if resp.Header.Get("Content-Encoding") != "gzip" {
		return resp, len(raw), string(raw)
	}
	zr, err := gzip.NewReader(strings.NewReader(string(raw)))
	if err != nil {
		e.tb.Fatalf("GET %s: gzip: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		e.tb.Fatalf("GET %s: gunzip: %v", path, err)
	}
	return resp, len(raw), string(b)
}

// Public pages, fragments, replay data and assets are gzipped for clients
// that take it, and are the same once decoded; the operator's pages and the
// event stream are not.
func TestPublicResponsesCompressed(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 100)...)
	for _, path := range []string{"/", "/fragments/games", "/games/g1", "/games/g1/replay", "/games/g1/timeline.json", static.Path("app.js")} {
		t.Run(path, func(t *testing.T) {
			resp, sent, body := e.getEncoded(path)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("HTTP %d, Content-Encoding %q; want 200, gzip", resp.StatusCode, resp.Header.Get("Content-Encoding"))
			}
			if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
				t.Fatalf("Vary %q lacks Accept-Encoding", resp.Header.Get("Vary"))
			}
			if _, plain := e.get(path); plain != body {
				t.Fatalf("decoded body (%d bytes) differs from the plain one (%d bytes)", len(body), len(plain))
			}
			t.Logf("%s: %d bytes gzipped, %d plain", path, sent, len(body))
		})
	}
	for _, path := range []string{"/status", "/api/status", "/healthz"} {
		if resp, _, _ := e.getEncoded(path); resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s: Content-Encoding %q, want none", path, resp.Header.Get("Content-Encoding"))
		}
	}
	s := e.stream("g1", 0, "Accept-Encoding", "gzip")
	if ce := s.resp.Header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("event stream: Content-Encoding %q, want none", ce)
	}
	s.lines(100)
}

// TestCompressionAsAsked: a response is gzipped only for a client that
// takes gzip, by the q-values of its Accept-Encoding (RFC 9110, section
// 12.5.3), and gzip is the only coding sent. middleware.Compress matched
// names as substrings: "gzip;q=0", gzip refused, was answered gzipped, and
// a client that named only deflate got raw DEFLATE labelled deflate, which
// names zlib's format. A plain answer said no Vary.
func TestCompressionAsAsked(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 20)...)
	tests := []struct {
		accept string
		want   string // Content-Encoding
	}{
		{"gzip", "gzip"},
		{"br, gzip;q=0.5", "gzip"},
		{"GZIP ; Q=1.0", "gzip"},
		{"x-gzip", "gzip"},
		{"gzip;q=0", ""},
		{"gzip; q=0.000, identity", ""},
		{"identity, gzip;q=0", ""},
		{"deflate", ""},
		{"br", ""},
		{"", ""},
	}
	for _, path := range []string{"/games/g1", "/games/g1/timeline.json", static.Path("app.js")} {
		_, plain := e.get(path)
		for _, tt := range tests {
			resp, body := e.get(path, "Accept-Encoding", tt.accept)
			if got := resp.Header.Get("Content-Encoding"); got != tt.want {
				t.Errorf("%s, Accept-Encoding %q: Content-Encoding %q, want %q", path, tt.accept, got, tt.want)
				continue
			}
			if tt.want == "" && body != plain {
				t.Errorf("%s, Accept-Encoding %q: body differs from the plain one", path, tt.accept)
			}
			// Plain or not, the response varies by Accept-Encoding: a
			// shared cache that kept a plain asset with no Vary would
			// serve it plain to every browser for the year it is fresh.
			if tt.accept != "" && !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("%s, Accept-Encoding %q: Vary %q lacks Accept-Encoding", path, tt.accept, resp.Header.Get("Vary"))
			}
		}
	}
}
