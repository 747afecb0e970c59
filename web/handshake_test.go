package web_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/web"
)

// TestHandshakeOneKey: a websocket handshake must carry exactly one
// Sec-WebSocket-Key (RFC 6455, 4.2.1 and 11.3.1); one without it or with
// two is refused with 400 on both engines before it spends anything of
// the client's, and the client's next, well-formed handshake is served.
// nbio took the first of two keys and switched protocols, where the std
// engine refused.
func TestHandshakeOneKey(t *testing.T) {
	tests := []struct {
		name string
		keys []string
	}{
		{"no key", nil},
		{"two keys", []string{"dGhlIHNhbXBsZSBub25jZQ==", "YW5vdGhlciBzYW1wbGUgbm9uY2U="}},
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
				t.Fatalf("handshake with %d keys answered %d, want 400", len(tt.keys), resp.StatusCode)
			}
			conn.Close()
			// The refused handshake holds none of the client's one socket.
			e.dial("g1", 0).c.CloseNow()
		})
	}
}
