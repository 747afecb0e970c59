package web

import (
	"bytes"
	"compress/flate"
	"net/http"
	"slices"
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
// frames go uncompressed, which the extension allows. It must never say yes
// where nbio's answer says no: that client would get compressed frames it
// did not agree to (TestOffersDeflateAgreesWithHandshake).
func offersDeflate(r *http.Request) bool {
	offered := false
	for _, v := range r.Header.Values("Sec-WebSocket-Extensions") {
		for _, ext := range parseExtensions(v) {
			if ext[0] != "permessage-deflate" {
				continue
			}
			offered = true
			if slices.Contains(ext[1:], "server_max_window_bits") {
				return false
			}
		}
	}
	return offered
}

// parseExtensions reads one Sec-WebSocket-Extensions value (RFC 6455 9.1):
// extensions separated by commas, each a token and its parameters, "; name"
// or "; name=value" with a token or quoted-string value. Each extension is
// its name and its parameters' names. Where the value stops parsing, the
// extensions before stand and the rest of the value is ignored, as nbio's
// upgrader does.
func parseExtensions(v string) [][]string {
	var out [][]string
	s := v
	for {
		var name string
		name, s = httpToken(trimSpace(s))
		if name == "" {
			return out
		}
		ext := []string{name}
		for {
			s = trimSpace(s)
			if !strings.HasPrefix(s, ";") {
				break
			}
			var p string
			p, s = httpToken(trimSpace(s[1:]))
			if p == "" {
				return out
			}
			s = trimSpace(s)
			if strings.HasPrefix(s, "=") {
				s = trimSpace(skipValue(trimSpace(s[1:])))
			}
			if s != "" && s[0] != ',' && s[0] != ';' {
				return out
			}
			ext = append(ext, p)
		}
		if s != "" && s[0] != ',' {
			return out
		}
		out = append(out, ext)
		if s == "" {
			return out
		}
		s = s[1:]
	}
}

func trimSpace(s string) string { return strings.TrimLeft(s, " \t") }

// httpToken splits s after its leading RFC 7230 token (tchar*).
func httpToken(s string) (tok, rest string) {
	i := 0
	for i < len(s) && isTchar(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// skipValue skips a parameter's value, a token or a quoted-string with
// backslash escapes. An unterminated quoted-string takes the rest of the
// value, which nbio accepts.
func skipValue(s string) (rest string) {
	if !strings.HasPrefix(s, `"`) {
		_, rest = httpToken(s)
		return rest
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return s[i+1:]
		}
	}
	return ""
}
