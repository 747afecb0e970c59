package web_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/web"
)

// Nothing follows the server's close frame, not even the sweep's ping that
// was due as the writer closed the socket: Chromium fails the connection
// on any frame after the close ("Ping received after close"), and the page
// sees 1006 instead of the code it was sent. The hook holds the sweep
// between its choice to ping and the ping's write while the server closes
// the socket (a message that is not a probe) and the client reads the close
// frame; the ping must then not be written.
func TestNothingAfterCloseFrame(t *testing.T) {
	var once sync.Once
	dialed := make(chan *rawSocket, 1)
	hooked := make(chan struct{})
	restore := web.SetTestHookPing(func() {
		once.Do(func() {
			defer close(hooked)
			c := <-dialed
			c.send(0x1, "hello") // not a probe: the server closes 1008
			select {
			case <-c.closed:
			case <-time.After(10 * time.Second):
				t.Error("no close frame within 10 s of a message that is not a probe")
			}
		})
	})
	t.Cleanup(restore)
	e := MustOpenEnv(t, func(cfg *web.Config) {
		cfg.WSEngine = web.WSEngineNbio
		cfg.PingEvery = 20 * time.Millisecond
	})
	e.upsert(e.gen("g1").chats(t, 2)...)
	c := dialRaw(t, e, "g1")
	dialed <- c

	select {
	case <-hooked:
	case <-time.After(10 * time.Second):
		t.Fatal("the sweep did not ping within 10 s")
	}
	// The ping, had it been written, is on the wire ahead of the answer:
	// whatever the client reads until the server hangs up came after the
	// close frame.
	c.send(0x8, "\x03\xe8")
	after, err := c.rest()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) > 0 {
		t.Errorf("frames after the close frame: %v", after)
	}
}

// rawSocket is a websocket client on a bare connection: it sees each frame
// as the server wrote it.
type rawSocket struct {
	tb     testing.TB
	conn   net.Conn
	closed chan struct{} // the close frame was read
	frames chan frameSeen
	err    chan error
}

type frameSeen struct {
	op      byte
	payload string
}

func (f frameSeen) String() string { return fmt.Sprintf("opcode %d %q", f.op, f.payload) }

// rawUpgrade opens game's live websocket from the start on a bare
// connection, its handshake with the header lines extra (each ending in
// CRLF), and returns the connection, its reader and the server's 101.
func rawUpgrade(tb testing.TB, e *env, game, extra string) (net.Conn, *bufio.Reader, *http.Response) {
	tb.Helper()
	conn, err := net.DialTimeout("tcp", e.srv.Addr(), 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "GET /games/%s/live?after=0 HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s\r\n", game, e.srv.Addr(), extra)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		tb.Fatalf("%q: %v", extra, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		tb.Fatalf("%q: HTTP %d, want 101", extra, resp.StatusCode)
	}
	return conn, br, resp
}

// dialRaw opens game's live websocket from the start, without compression.
func dialRaw(tb testing.TB, e *env, game string) *rawSocket {
	tb.Helper()
	conn, br, _ := rawUpgrade(tb, e, game, "")
	c := &rawSocket{tb: tb, conn: conn, closed: make(chan struct{}), frames: make(chan frameSeen, 1024), err: make(chan error, 1)}
	go c.read(br)
	return c
}

// read reads frames until the connection ends; those after the close frame
// go to frames.
func (c *rawSocket) read(r io.Reader) {
	defer close(c.frames)
	closed := false
	for {
		var h [2]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if err != io.EOF {
				c.err <- err
			}
			return
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				c.err <- err
				return
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				c.err <- err
				return
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(r, p); err != nil {
			c.err <- err
			return
		}
		f := frameSeen{op: h[0] & 0x0f, payload: string(p)}
		if closed {
			c.frames <- f
		}
		if f.op == 0x8 && !closed {
			closed = true
			close(c.closed)
		}
	}
}

// send writes one masked frame (opcode op) from the client.
func (c *rawSocket) send(op byte, payload string) {
	mask := [4]byte{1, 2, 3, 4}
	b := []byte{0x80 | op, 0x80 | byte(len(payload))}
	b = append(b, mask[:]...)
	for i := range len(payload) {
		b = append(b, payload[i]^mask[i%4])
	}
	if _, err := c.conn.Write(b); err != nil {
		c.tb.Errorf("send: %v", err)
	}
}

// rest waits for the server to hang up and returns the frames read after
// the close frame.
func (c *rawSocket) rest() ([]frameSeen, error) {
	var out []frameSeen
	for f := range c.frames {
		out = append(out, f)
	}
	select {
	case err := <-c.err:
		return out, err
	default:
		return out, nil
	}
}

// TestNothingAfterNbioClose: nbio's own close frames, 1009 for a message
// over the 512 bytes a page may send and 1002 for a protocol error (text
// that is not UTF-8, a close code no endpoint may send), take the socket's
// lock and look whether the close frame went out, as every other write of
// the socket does: sent after the server's own close (here for a message
// that is not a probe), before the peer's answer, they are not written.
// nbio wrote them without a look, and the client read a second close frame
// after the first, which a browser takes for a protocol error ("Close
// received after close"). The same lock keeps the sweep's ping and the
// writer's frames from following nbio's close, which it writes just before
// it drops the connection.
func TestNothingAfterNbioClose(t *testing.T) {
	tests := []struct {
		name    string
		op      byte
		payload string
	}{
		{"message too big", 0x1, strings.Repeat("x", 600)},
		{"text not UTF-8", 0x1, "\xff\xfe"},
		{"close code 999", 0x8, "\x03\xe7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := MustOpenEnv(t, func(cfg *web.Config) { cfg.WSEngine = web.WSEngineNbio })
			e.upsert(e.gen("g1").chats(t, 1)...)
			c := dialRaw(t, e, "g1")
			c.send(0x1, "hello") // not a probe: the server closes 1008
			select {
			case <-c.closed:
			case <-time.After(10 * time.Second):
				t.Fatal("no close frame within 10 s of a message that is not a probe")
			}
			c.sendLong(tt.op, tt.payload)
			after, err := c.rest()
			if err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatal(err)
			}
			if len(after) > 0 {
				t.Errorf("frames after the close frame: %v", after)
			}
		})
	}
}

// sendLong writes one masked frame (opcode op) from the client, of any
// payload length.
func (c *rawSocket) sendLong(op byte, payload string) {
	mask := [4]byte{1, 2, 3, 4}
	b := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	b = append(b, mask[:]...)
	for i := range len(payload) {
		b = append(b, payload[i]^mask[i%4])
	}
	if _, err := c.conn.Write(b); err != nil {
		c.tb.Errorf("send: %v", err)
	}
}
