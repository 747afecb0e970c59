package web

import (
	"bytes"
	"compress/flate"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Websockets on the nbio engine speak permessage-deflate (RFC 7692) with
// no context takeover on either side, which is what nbio's handshake
// answers (server_no_context_takeover; client_no_context_takeover). Each
// message is then compressed on its own, so a frame's compressed form is
// the same for every socket: it is made once, by the first writer that
// needs it, and shared like the frame (docs/contracts.md, "Compression").
// A line frame is about half its size compressed, a whole scoreboard a
// fifth, at about 12 µs a frame (docs/benchmarks-journal.md).

// minDeflate is the shortest frame worth compressing; shorter ones (probe,
// watching, reset) go as they are, which the extension allows.
const minDeflate = 128

// deflated is a frame's compressed payload, made at most once.
type deflated struct {
	once sync.Once
	b    []byte // nil when compressing does not make it smaller
}

// deflateCount counts the compressions done, and the payload bytes of
// their frames before and after (after is before when compressing did not
// shrink the frame, which then goes plain): once per frame, however many
// sockets take it.
type deflateCount struct {
	frames, plain, packed atomic.Int64
}

// of returns data's compressed payload, or nil when it is not smaller;
// n counts the compression when this call made it.
func (z *deflated) of(data []byte, n *deflateCount) []byte {
	z.once.Do(func() {
		z.b = deflate(data)
		n.frames.Add(1)
		n.plain.Add(int64(len(data)))
		if z.b != nil {
			n.packed.Add(int64(len(z.b)))
		} else {
			n.packed.Add(int64(len(data)))
		}
	})
	return z.b
}

// newDeflated returns the cell of a frame worth compressing, else nil.
func newDeflated(data []byte) *deflated {
	if len(data) < minDeflate {
		return nil
	}
	return new(deflated)
}

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed) // BestSpeed is a valid level
	return w
}}

// flateTail ends every sync-flushed deflate stream; a permessage-deflate
// message is sent without it (RFC 7692, section 7.2.1).
var flateTail = []byte{0, 0, 0xff, 0xff}

// deflate compresses data as one permessage-deflate message, or returns
// nil when that is no smaller.
func deflate(data []byte) []byte {
	buf := bytes.NewBuffer(make([]byte, 0, len(data)/2+16))
	w := flateWriters.Get().(*flate.Writer)
	defer flateWriters.Put(w)
	w.Reset(buf)
	if _, err := w.Write(data); err != nil {
		return nil
	}
	if err := w.Flush(); err != nil {
		return nil
	}
	b, ok := bytes.CutSuffix(buf.Bytes(), flateTail)
	if !ok || len(b) >= len(data) {
		return nil
	}
	return b
}

// offersDeflate reports whether a websocket handshake offers
// permessage-deflate, as nbio's upgrader reads it (then its answer accepts),
// and no offer asks the server for a window smaller than flate's 32 KiB
// (server_max_window_bits, which nbio's answer ignores): to such a client
// frames go uncompressed, which the extension allows.
func offersDeflate(r *http.Request) bool {
	offered := false
	for _, v := range r.Header.Values("Sec-WebSocket-Extensions") {
		for _, ext := range strings.Split(v, ",") {
			params := strings.Split(ext, ";")
			if strings.TrimSpace(params[0]) != "permessage-deflate" {
				continue
			}
			offered = true
			for _, p := range params[1:] {
				name, _, _ := strings.Cut(p, "=")
				if strings.TrimSpace(name) == "server_max_window_bits" {
					return false
				}
			}
		}
	}
	return offered
}
