package web_test

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/web"
)

// TestHandshakeOneKey: a websocket handshake must carry exactly one
// Sec-WebSocket-Key (RFC 6455, 4.2.1 and 11.3.1), 16 bytes in base64; one
// without it, with two or with one that is not 16 bytes in base64 is
// refused with 400 on both engines before it spends anything of the
// client's, and the client's next, well-formed handshake is served. nbio
// took the first of two keys and switched protocols, where the std engine
// refused; until 6 Dec 2026 it switched on a malformed key too.
func TestHandshakeOneKey(t *testing.T) {
	tests := []struct {
		name string
		keys []string
	}{
		{"no key", nil},
		{"two keys", []string{"dGhlIHNhbXBsZSBub25jZQ==", "YW5vdGhlciBzYW1wbGUgbm9uY2U="}},
		{"short key", []string{"short"}},
		{"key not base64", []string{"dGhlIHNhbXBsZSBub25jZQ!!"}},
		{"key of 15 bytes", []string{"dGhlIHNhbXBsZSBub25j"}},
		{"key of 17 bytes", []string{"dGhlIHNhbXBsZSBub25jZSE="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := MustOpenEnv(t, func(c *web.Config) { c.MaxSocketsPerClient = 1 })
			conn, err := net.Dial("tcp", e.srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var req strings.Builder
			req.WriteString("GET /games/g1/live?after=0 HTTP/1.1\r\nHost: " + e.srv.Addr() +
				"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n")
			for _, k := range tt.keys {
				req.WriteString("Sec-WebSocket-Key: " + k + "\r\n")
			}
			req.WriteString("\r\n")
			if _, err := conn.Write([]byte(req.String())); err != nil {
				t.Fatal(err)
			}
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("read response: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("handshake with keys %q answered %d, want 400", tt.keys, resp.StatusCode)
			}
			conn.Close()
			// The refused handshake holds none of the client's one socket.
			e.dial("g1", 0).c.CloseNow()
		})
	}
}

// TestHandshakeRequestBody: a websocket handshake may carry a body (no
// browser sends one; a GET may): it is read before the switch, within
// ReadTimeout and up to the 4 KiB every request is allowed, as an event
// stream's is (TestEventsRequestBody), and the socket served, on both
// engines. A chunked body over 4 KiB is a 413, as a Content-Length over it
// is on every route; a body announced and not sent within ReadTimeout a
// 400; neither holds one of the client's sockets. Unread, the body's bytes
// were the client's first frames on the std engine (coder/websocket reads
// on from net/http's buffer), which closed the socket as a protocol error
// or took a body that held a frame for a message, and on the nbio engine
// what net/http had buffered of it was dropped and the rest taken for
// frames; a body announced and never sent was switched as if it had come.
func TestHandshakeRequestBody(t *testing.T) {
	big := strings.Repeat("x", 5<<10)
	for _, engine := range []string{web.WSEngineStd, web.WSEngineNbio} {
		t.Run(engine, func(t *testing.T) {
			e := MustOpenEnv(t, func(c *web.Config) {
				c.WSEngine = engine
				c.ReadTimeout = time.Second // the body that never comes
			})
			g := e.gen("g1")
			e.upsert(g.chats(t, 1)...)
			var sockets []*bodySocket
			for _, tc := range []struct {
				name, header, body string
				code               int
			}{
				{"Content-Length", "Content-Length: 5\r\n", "hello", http.StatusSwitchingProtocols},
				// A masked text frame of a probe, as a page would send it.
				{"a frame for a body", "Content-Length: 19\r\n", string(maskedText(`{"t":"probe"}`)), http.StatusSwitchingProtocols},
				{"chunked", "Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n", http.StatusSwitchingProtocols},
				{"chunked, over 4 KiB", "Transfer-Encoding: chunked\r\n", fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(big), big),
					http.StatusRequestEntityTooLarge},
				{"announced, not sent", "Content-Length: 5\r\n", "", http.StatusBadRequest},
			} {
				s := dialWithBody(t, e, "g1", tc.header, tc.body)
				if s.err != nil {
					t.Errorf("%s: no response: %v", tc.name, s.err)
					continue
				}
				if s.resp.StatusCode != tc.code {
					t.Errorf("%s: %d, want %d", tc.name, s.resp.StatusCode, tc.code)
					continue
				}
				if tc.code != http.StatusSwitchingProtocols {
					continue
				}
				if seq, err := s.nextLine(); err != nil || seq != 1 {
					t.Errorf("%s: first line seq %d (%v), want 1", tc.name, seq, err)
					continue
				}
				sockets = append(sockets, s)
			}
			e.upsert(g.chats(t, 1)...)
			for i, s := range sockets {
				if seq, err := s.nextLine(); err != nil || seq != 2 {
					t.Errorf("socket %d: live line seq %d (%v), want 2", i, seq, err)
				}
			}
			if t.Failed() {
				return
			}
			if n := e.srv.Stats().Clients; n != int64(len(sockets)) {
				t.Fatalf("%d websockets open, want %d", n, len(sockets))
			}
		})
	}
}

// bodySocket is a websocket opened by a handshake with a body, read frame
// by frame off its bare connection.
type bodySocket struct {
	conn net.Conn
	br   *bufio.Reader
	resp *http.Response
	err  error // no response was read
}

// dialWithBody sends game's websocket handshake with the header lines
// header (each ending in CRLF) and body after its head, in one write, and
// reads the response's head, whatever its status, or the error that
// ended its read.
func dialWithBody(tb testing.TB, e *env, game, header, body string) *bodySocket {
	tb.Helper()
	conn, err := net.DialTimeout("tcp", e.srv.Addr(), 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /games/%s/live?after=0 HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s\r\n%s", game, e.srv.Addr(), header, body)
	s := &bodySocket{conn: conn, br: bufio.NewReader(conn)}
	if s.resp, s.err = http.ReadResponse(s.br, nil); s.err != nil {
		return s
	}
	if s.resp.StatusCode != http.StatusSwitchingProtocols {
		s.resp.Body.Close()
	}
	return s
}

// nextLine reads frames until a line frame and returns its seq; a close
// frame, or the connection's end, is an error.
func (s *bodySocket) nextLine() (int64, error) {
	s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var h [2]byte
		if _, err := io.ReadFull(s.br, h[:]); err != nil {
			return 0, fmt.Errorf("read a frame: %w", err)
		}
		n := uint64(h[1] & 0x7f)
		var ext []byte
		switch n {
		case 126:
			ext = make([]byte, 2)
		case 127:
			ext = make([]byte, 8)
		}
		if ext != nil {
			if _, err := io.ReadFull(s.br, ext); err != nil {
				return 0, fmt.Errorf("read a frame's length: %w", err)
			}
			n = 0
			for _, b := range ext {
				n = n<<8 | uint64(b)
			}
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(s.br, p); err != nil {
			return 0, fmt.Errorf("read a frame's payload: %w", err)
		}
		switch op := h[0] & 0x0f; op {
		case 0x8:
			code := 0
			if len(p) >= 2 {
				code = int(binary.BigEndian.Uint16(p))
			}
			return 0, fmt.Errorf("closed by the server: %d %q", code, p[min(2, len(p)):])
		case 0x1:
			var f struct {
				T   string `json:"t"`
				Seq int64  `json:"seq"`
			}
			if err := json.Unmarshal(p, &f); err != nil {
				return 0, fmt.Errorf("frame %q: %w", p, err)
			}
			if f.T == "line" {
				return f.Seq, nil
			}
		}
	}
}

// maskedText is a client's text frame of payload (under 126 bytes).
func maskedText(payload string) []byte {
	mask := [4]byte{1, 2, 3, 4}
	b := []byte{0x81, 0x80 | byte(len(payload))}
	b = append(b, mask[:]...)
	for i := range len(payload) {
		b = append(b, payload[i]^mask[i%4])
	}
	return b
}

// TestHandshakeNotWellFormed: a request to /live that is no well-formed
// websocket handshake is answered as coder/websocket answers it on the
// std engine, on both engines, before it spends the address's upgrade
// rate: HTTP/1.0, a plain GET, an Upgrade or Connection field without its
// token 426 with Upgrade: websocket, a HEAD 405 with Allow: GET, another
// version 400 with Sec-WebSocket-Version: 13. Until 6 Dec 2026 each spent one of the
// address's upgrades on both engines, and the nbio engine switched
// protocols on an HTTP/1.0 handshake and answered the others 400.
func TestHandshakeNotWellFormed(t *testing.T) {
	const key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	tests := []struct {
		name, proto, header string
		code                int
		answer              string // a field the answer must carry, "Name: value"
		method              string // GET when empty
	}{
		{"HTTP/1.0", "HTTP/1.0", "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" + key,
			http.StatusUpgradeRequired, "", ""},
		{"plain GET", "HTTP/1.1", "", http.StatusUpgradeRequired, "Upgrade: websocket", ""},
		{"no Upgrade field", "HTTP/1.1", "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" + key,
			http.StatusUpgradeRequired, "Upgrade: websocket", ""},
		{"Connection without upgrade", "HTTP/1.1", "Connection: keep-alive\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" + key,
			http.StatusUpgradeRequired, "Connection: Upgrade", ""},
		{"version 8", "HTTP/1.1", "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 8\r\n" + key,
			http.StatusBadRequest, "Sec-WebSocket-Version: 13", ""},
		{"no version", "HTTP/1.1", "Connection: Upgrade\r\nUpgrade: websocket\r\n" + key,
			http.StatusBadRequest, "Sec-WebSocket-Version: 13", ""},
		// GetHead hands a HEAD to the GET route, whose getOnly refuses it
		// (until 6 Dec 2026 it spent an upgrade before the library
		// refused it, and said no Allow; TestLiveAllowsGetAlone).
		{"HEAD", "HTTP/1.1", "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" + key,
			http.StatusMethodNotAllowed, "Allow: GET", http.MethodHead},
	}
	// One upgrade a long while: the refusals must leave it for the
	// handshake that follows them.
	e := MustOpenEnv(t, func(c *web.Config) { c.UpgradeRate = 0.001; c.UpgradeBurst = 1 })
	for _, tt := range tests {
		conn, err := net.Dial("tcp", e.srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		method := cmp.Or(tt.method, http.MethodGet)
		req := method + " /games/g1/live?after=0 " + tt.proto + "\r\nHost: " + e.srv.Addr() + "\r\n" + tt.header + "\r\n"
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
		conn.Close()
		if err != nil {
			t.Fatalf("%s: read response: %v", tt.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("%s: answered %d, want %d", tt.name, resp.StatusCode, tt.code)
		}
		if name, value, ok := strings.Cut(tt.answer, ": "); ok && !strings.EqualFold(resp.Header.Get(name), value) {
			t.Errorf("%s: answer's %s %q, want %q", tt.name, name, resp.Header.Get(name), value)
		}
	}
	e.dial("g1", 0).c.CloseNow()
}
