package web_test

import (
	"bufio"
	"fmt"
	"net"
	"net/textproto"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/web"
)

// rawStream is an event stream read off a plain TCP connection, so that
// the test's side of it holds no goroutine.
type rawStream struct {
	conn   net.Conn
	r      *bufio.Reader
	status string // the response's status line
	head   textproto.MIMEHeader
}

// rawStream opens game's stream and reads its head.
func (e *env) rawStream(game string) *rawStream {
	e.tb.Helper()
	s := e.rawStreamWith(game, "", "")
	if s.status != "HTTP/1.1 200 OK" {
		e.tb.Fatalf("stream %s: status %q", game, s.status)
	}
	return s
}

// rawStreamWith asks for game's stream with more header lines (each ending
// in CRLF) and a body after the request's head, in one write, and reads the
// response's status and head, whatever the status.
func (e *env) rawStreamWith(game, header, body string) *rawStream {
	e.tb.Helper()
	c, err := net.Dial("tcp", e.srv.Addr())
	if err != nil {
		e.tb.Fatal(err)
	}
	e.tb.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /games/%s/events?after=0 HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n%s\r\n%s", game, e.srv.Addr(), header, body)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	s := &rawStream{conn: c, r: bufio.NewReader(c)}
	tp := textproto.NewReader(s.r)
	if s.status, err = tp.ReadLine(); err != nil {
		e.tb.Fatalf("stream %s: status: %v", game, err)
	}
	if s.head, err = tp.ReadMIMEHeader(); err != nil {
		e.tb.Fatalf("stream %s: head: %v", game, err)
	}
	return s
}

// nextID reads up to the next line event and returns its id (its seq).
func (s *rawStream) nextID(tb testing.TB) string {
	tb.Helper()
	s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		l, err := s.r.ReadString('\n')
		if err != nil {
			tb.Fatalf("stream: %v", err)
		}
		if id, ok := strings.CutPrefix(l, "id: "); ok {
			return strings.TrimSpace(id)
		}
	}
}

// On the nbio engine an event stream goes to the poller once its head is
// written, as a websocket does after its handshake: an open stream holds no
// goroutine, and its response ends with the connection. On the std engine
// each holds its request's goroutines and is chunked.
func TestEventsOnThePoller(t *testing.T) {
	const n = 60
	e := MustOpenEnv(t, func(c *web.Config) { c.UpgradeBurst, c.MaxSocketsPerClient = n, n })
	g := e.gen("g1")
	e.upsert(g.chats(t, 1)...)
	base := runtime.NumGoroutine()
	streams := make([]*rawStream, n)
	for i := range streams {
		streams[i] = e.rawStream("g1")
		if id := streams[i].nextID(t); id != "1" {
			t.Fatalf("stream %d: first line %s, want seq 1", i, id)
		}
	}
	waitFor(t, 5*time.Second, "every stream counted", func() bool { return e.srv.Stats().EventStreams == n })
	head := streams[0].head
	if ct := head.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	if e.cfg.WSEngine == web.WSEngineStd {
		if got := runtime.NumGoroutine() - base; got < n {
			t.Fatalf("%d streams on the std engine hold %d goroutines, want one at least each", n, got)
		}
		if te := head.Get("Transfer-Encoding"); te != "chunked" {
			t.Fatalf("std engine: Transfer-Encoding %q, want chunked", te)
		}
	} else {
		// The request goroutines return once the streams are handed over.
		waitFor(t, 5*time.Second, "the request goroutines gone", func() bool { return runtime.NumGoroutine()-base < n/4 })
		if c := head.Get("Connection"); c != "close" || head.Get("Transfer-Encoding") != "" || head.Get("Content-Length") != "" {
			t.Fatalf("nbio engine: Connection %q, Transfer-Encoding %q, Content-Length %q: want a response that the close ends",
				c, head.Get("Transfer-Encoding"), head.Get("Content-Length"))
		}
		if head.Get("X-Content-Type-Options") == "" {
			t.Fatalf("the middleware's headers are lost: %v", head)
		}
	}
	// Live: the next line reaches every stream.
	e.upsert(g.chats(t, 1)...)
	for i, s := range streams {
		if id := s.nextID(t); id != "2" {
			t.Fatalf("stream %d: live line %s, want seq 2", i, id)
		}
	}
	// Clients that hang up are gone from the count.
	for _, s := range streams {
		s.conn.Close()
	}
	waitFor(t, 5*time.Second, "every stream ended", func() bool { return e.srv.Stats().EventStreams == 0 })
}

// TestEventsRequestBody: a stream's request may carry a body (no
// EventSource sends one; a GET may): it is read before the stream starts,
// within ReadTimeout and up to the 4 KiB every request is allowed, and the
// stream served, on both engines. A chunked body over 4 KiB is a 413, as a
// Content-Length over it is on every route; a body announced and not sent
// within ReadTimeout a 400. On the nbio engine such a stream went to the
// poller with its body unread: taken for bytes sent after the request, it
// dropped the connection without a response. On the std engine net/http
// read the body before the stream's head, with no deadline: a body
// announced and never sent held the stream back for ever, no head and no
// ping, and a chunked one was read up to 256 KiB.
func TestEventsRequestBody(t *testing.T) {
	big := strings.Repeat("x", 5<<10)
	for _, engine := range []string{web.WSEngineStd, web.WSEngineNbio} {
		t.Run(engine, func(t *testing.T) {
			e := MustOpenEnv(t, func(c *web.Config) {
				c.WSEngine = engine
				c.ReadTimeout = time.Second // the body that never comes
			})
			g := e.gen("g1")
			e.upsert(g.chats(t, 1)...)
			var streams []*rawStream
			for _, tc := range []struct {
				name, header, body, status string
			}{
				{"Content-Length", "Content-Length: 5\r\n", "hello", "HTTP/1.1 200 OK"},
				{"chunked", "Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n", "HTTP/1.1 200 OK"},
				{"chunked, over 4 KiB", "Transfer-Encoding: chunked\r\n", fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(big), big),
					"HTTP/1.1 413 Request Entity Too Large"},
				{"announced, not sent", "Content-Length: 5\r\n", "", "HTTP/1.1 400 Bad Request"},
			} {
				s := e.rawStreamWith("g1", tc.header, tc.body)
				if s.status != tc.status {
					t.Fatalf("%s: %q, want %q", tc.name, s.status, tc.status)
				}
				if tc.status != "HTTP/1.1 200 OK" {
					continue
				}
				if id := s.nextID(t); id != "1" {
					t.Fatalf("%s: first line %s, want seq 1", tc.name, id)
				}
				streams = append(streams, s)
			}
			e.upsert(g.chats(t, 1)...)
			for i, s := range streams {
				if id := s.nextID(t); id != "2" {
					t.Fatalf("stream %d: live line %s, want seq 2", i, id)
				}
			}
			if n := e.srv.Stats().EventStreams; n != int64(len(streams)) {
				t.Fatalf("%d streams open, want %d", n, len(streams))
			}
		})
	}
}
