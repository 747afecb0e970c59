package nbiocheck

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// flateTail ends a sync-flushed deflate stream; permessage-deflate sends
// a message without it (RFC 7692, section 7.2.2 says to put it back).
var flateTail = []byte{0, 0, 0xff, 0xff}

// Frames checks one socket's output as the kernel takes it (nbio's
// OnWrittenSize): every websocket frame of a server well formed (no mask,
// no reserved bit but a compressed message's RSV1 where permessage-deflate
// was negotiated, a known opcode, a control frame whole and at most 125
// bytes), every text message, inflated if need be, one JSON object, and
// nothing after a close frame. It reports the first bad frame with its
// header, its ends and the frame before it, and checks no further: past a
// bad header the stream has no frames to find.
type Frames struct {
	report  func(misuse string)
	deflate bool // permessage-deflate negotiated: RSV1 marks a compressed message

	off    int64         // bytes seen
	hdr    []byte        // the current frame's header so far
	need   int64         // its payload bytes still to come; -1 in a header
	op     byte          // the current frame's opcode
	fin    bool          // the current frame ends its message
	msg    []byte        // the text message so far (fragments gathered)
	ctl    bool          // the current frame is a control frame
	z      bool          // the current message is compressed
	fr     io.ReadCloser // the socket's inflater, reset for each message
	out    bytes.Buffer  // an inflated message
	prev   string        // the frame before, described
	frames int64
	closed bool // a close frame went out: nothing may follow it
	bad    bool
}

// NewFrames returns a check of one socket's output that calls report with
// the first bad frame; deflate says the socket negotiated
// permessage-deflate.
func NewFrames(report func(misuse string), deflate bool) *Frames {
	return &Frames{report: report, deflate: deflate, need: -1}
}

// Write takes the next bytes written to the socket.
func (f *Frames) Write(b []byte) {
	for len(b) > 0 && !f.bad {
		if f.need < 0 {
			f.hdr = append(f.hdr, b[0])
			b = b[1:]
			f.off++
			f.header()
			continue
		}
		n := min(int64(len(b)), f.need)
		if !f.ctl && (f.op == 1 || f.op == 0) {
			f.msg = append(f.msg, b[:n]...)
		}
		b = b[n:]
		f.off += n
		f.need -= n
		if f.need == 0 {
			f.end()
		}
	}
}

// header reads the header once it is whole.
func (f *Frames) header() {
	h := f.hdr
	if len(h) < 2 {
		return
	}
	size := 2
	switch h[1] & 0x7f {
	case 126:
		size = 4
	case 127:
		size = 10
	}
	if len(h) < size {
		return
	}
	f.op, f.fin = h[0]&0x0f, h[0]&0x80 != 0
	f.ctl = f.op >= 8
	if f.closed {
		// A browser fails the connection on any frame after the close
		// (Chromium: "Ping received after close"): the page sees 1006,
		// not the code the server sent.
		f.fail("a frame after the close frame")
		return
	}
	var n int64
	switch h[1] & 0x7f {
	case 126:
		n = int64(binary.BigEndian.Uint16(h[2:4]))
	case 127:
		n = int64(binary.BigEndian.Uint64(h[2:10]))
	default:
		n = int64(h[1] & 0x7f)
	}
	switch {
	case h[1]&0x80 != 0:
		f.fail("a masked frame")
	case h[0]&0x30 != 0 || h[0]&0x40 != 0 && !(f.deflate && (f.op == 1 || f.op == 2)):
		f.fail("a reserved bit set")
	case f.op != 0 && f.op != 1 && f.op != 2 && f.op != 8 && f.op != 9 && f.op != 10:
		f.fail("an unknown opcode")
	case f.ctl && (!f.fin || n > 125):
		f.fail("a fragmented or long control frame")
	case f.op == 0 && len(f.msg) == 0:
		f.fail("a continuation with no message begun")
	case (f.op == 1 || f.op == 2) && len(f.msg) > 0:
		f.fail("a new message inside a fragmented one")
	case n > 1<<24:
		f.fail("a frame over 16 MiB")
	}
	if f.bad {
		return
	}
	if f.op == 1 || f.op == 2 {
		f.z = h[0]&0x40 != 0
	}
	f.need = n
	if n == 0 {
		f.end()
	}
}

// end checks a frame whose payload is whole.
func (f *Frames) end() {
	f.frames++
	f.closed = f.op == 8
	if !f.ctl && (f.op == 1 || f.op == 0) && f.fin {
		m := f.msg
		if f.z {
			// One inflater per socket, reset: a new one per message costs
			// tens of KiB, too much for a renderer the crash tests load.
			src := io.MultiReader(bytes.NewReader(f.msg), bytes.NewReader(flateTail))
			if f.fr == nil {
				f.fr = flate.NewReader(src)
			} else if err := f.fr.(flate.Resetter).Reset(src, nil); err != nil {
				f.fail("an inflater that does not reset: " + err.Error())
				return
			}
			f.out.Reset()
			if _, err := f.out.ReadFrom(f.fr); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
				f.fail("a compressed message that does not inflate: " + err.Error())
				return
			}
			m = f.out.Bytes()
		}
		if len(m) == 0 || m[0] != '{' || !json.Valid(m) {
			f.fail("a text message that is not one JSON object")
			return
		}
	}
	f.prev = f.describe()
	if !f.ctl && f.fin {
		f.msg = f.msg[:0]
	}
	f.hdr, f.need = f.hdr[:0], -1
}

func (f *Frames) describe() string {
	m := f.msg
	if len(m) > 96 {
		return fmt.Sprintf("header % x, %d bytes %q … %q", f.hdr, len(m), m[:48], m[len(m)-48:])
	}
	return fmt.Sprintf("header % x, %d bytes %q", f.hdr, len(m), m)
}

func (f *Frames) fail(what string) {
	f.bad = true
	if f.report != nil {
		f.report(fmt.Sprintf("nbiocheck: %s on the wire, frame %d ending at byte %d: %s; the frame before: %s",
			what, f.frames+1, f.off, f.describe(), f.prev))
	}
}
