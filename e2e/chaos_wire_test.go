package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
)

// wireTailSize is how much of a connection's input a chaos client keeps:
// a bad frame, its header and what came before and after it, with room for
// the reader's read-ahead.
const wireTailSize = 64 << 10

// wireTail is a client connection that keeps the last bytes read from it,
// so that a bad frame can be shown as it was on the wire (header and
// neighbours), not only as the websocket library handed it over.
type wireTail struct {
	net.Conn
	drop func(*wireTail)

	mu   sync.Mutex
	ring [wireTailSize]byte
	n    int64 // bytes read in all
}

func (w *wireTail) Read(p []byte) (int, error) {
	n, err := w.Conn.Read(p)
	if n > 0 {
		w.mu.Lock()
		for b := p[:n]; len(b) > 0; {
			k := copy(w.ring[w.n%wireTailSize:], b)
			w.n += int64(k)
			b = b[k:]
		}
		w.mu.Unlock()
	}
	return n, err
}

func (w *wireTail) Close() error {
	w.drop(w)
	return w.Conn.Close()
}

// tail returns the bytes kept, oldest first, and the input offset of the
// first of them.
func (w *wireTail) tail() ([]byte, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n <= wireTailSize {
		return append([]byte(nil), w.ring[:w.n]...), 0
	}
	i := w.n % wireTailSize
	return append(append([]byte(nil), w.ring[i:]...), w.ring[:i]...), w.n - wireTailSize
}

// wireTails are the open connections of one client.
type wireTails struct {
	mu    sync.Mutex
	conns map[*wireTail]struct{}
}

// dialer wraps dial so that every connection it makes keeps its tail.
func (ws *wireTails) dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		w := &wireTail{Conn: c, drop: ws.drop}
		ws.mu.Lock()
		if ws.conns == nil {
			ws.conns = map[*wireTail]struct{}{}
		}
		ws.conns[w] = struct{}{}
		ws.mu.Unlock()
		return w, nil
	}
}

func (ws *wireTails) drop(w *wireTail) {
	ws.mu.Lock()
	delete(ws.conns, w)
	ws.mu.Unlock()
}

// around describes where msg, a message read whole, sat on the wire of the
// open connection that carried it: the bytes before it (its frame header
// and the end of the frame before) and after it.
func (ws *wireTails) around(msg []byte) string {
	ws.mu.Lock()
	conns := make([]*wireTail, 0, len(ws.conns))
	for w := range ws.conns {
		conns = append(conns, w)
	}
	ws.mu.Unlock()
	if len(msg) == 0 {
		return "on the wire: an empty message, not located"
	}
	for _, w := range conns {
		t, base := w.tail()
		i := bytes.LastIndex(t, msg)
		if i < 0 {
			continue
		}
		before := t[max(0, i-64):i]
		after := t[i+len(msg) : min(len(t), i+len(msg)+160)]
		return fmt.Sprintf("on the wire at byte %d of the connection: 64 bytes before % x (%q); %d bytes after %q",
			base+int64(i), before, before, len(after), after)
	}
	return fmt.Sprintf("on the wire: not found in the last %d bytes of %d open connections", wireTailSize, len(conns))
}
