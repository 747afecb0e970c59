package web

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"time"
)

// maxGather bounds the frames one write of the nbio engine carries: a
// writer that drained a long mailbox (a burst, a slow reader catching up)
// writes it in pieces of about this size rather than one buffer of it all.
const maxGather = 32 << 10

// gatherPool lends the buffers a flush gathers its frames in. nbio copies
// what the kernel does not take at once, so a buffer is free again as soon
// as its write returns.
var gatherPool = sync.Pool{New: func() any {
	b := make([]byte, 0, maxGather+4<<10)
	return &b
}}

// getGather lends an empty gather buffer.
func getGather() *[]byte {
	pb := gatherPool.Get().(*[]byte)
	*pb = (*pb)[:0]
	return pb
}

// putGather gives pb back with b, what was gathered in it, unless one
// freak frame grew it past twice its size.
func putGather(pb *[]byte, b []byte) {
	if cap(b) <= 2*maxGather {
		*pb = b[:0]
		gatherPool.Put(pb)
	}
}

// appendTextFrame appends data as one unmasked, unfragmented websocket text
// frame (RFC 6455, section 5.2: a server's frames are not masked), with
// RSV1 set when data is compressed (RFC 7692); its size is wireSize(data).
func appendTextFrame(b, data []byte, compressed bool) []byte {
	var b0 byte = 0x81 // FIN, text
	if compressed {
		b0 |= 0x40
	}
	switch n := len(data); {
	case n < 126:
		b = append(b, b0, byte(n))
	case n < 1<<16:
		b = append(b, b0, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, b0, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, data...)
}

// appendFrame appends f to b as it goes on the wire: a websocket text frame
// of its compressed form when the socket negotiated permessage-deflate and
// that is smaller, else of its data; a server-sent event on a stream.
func (ps *pollSocket) appendFrame(b []byte, f frame) []byte {
	if ps.stream != nil {
		return encodeEvent(b, f)
	}
	if ps.deflate && f.z != nil {
		if z := f.z.of(f.data, &ps.p.s.stats.deflated); z != nil {
			return appendTextFrame(b, z, true)
		}
	}
	return appendTextFrame(b, f.data, false)
}

// writeFrames hands frames already framed by appendTextFrame to the socket
// in one write: the frames a writer drained together cost one system call
// (docs/benchmarks-journal.md, "one write per wake-up"). The write
// goes to the connection under the websocket: one Write of the nbio
// connection is atomic against the others (its lock), and control frames
// (writeControl, and nbio's own close frames) are single Writes too, so no
// frame is split by another. It writes nothing once the close frame went
// out (closeNow).
func (ps *pollSocket) writeFrames(b []byte) error {
	ps.ctl.Lock()
	defer ps.ctl.Unlock()
	if ps.closing.Load() {
		return errPollClosed // nothing follows the close frame (closeNow)
	}
	if ps.unsent() <= 0 {
		ps.progress.Store(time.Now().UnixNano()) // the stall clock starts now
	}
	ps.queued.Add(int64(len(b)))
	_, err := ps.out().Write(b)
	return err
}

// out is the connection the socket's bytes are written to: the one under
// nbio's own writes (ownWrites), which the socket's writes hold ctl for
// already.
func (ps *pollSocket) out() net.Conn {
	if ps.stream != nil {
		return ps.stream
	}
	c := ps.conn.Load().UnderlayerConn()
	if o, ok := c.(*ownWrites); ok {
		return o.Conn
	}
	return c
}

// writeQueued writes the frames queued in the mailbox, in order, gathered
// into as few writes as maxGather allows; frames are counted sent when
// their write returns. It reports false when the socket is done: closed as
// slow, or a write failed (nbio has closed it, and end runs).
func (ps *pollSocket) writeQueued() bool {
	s := ps.p.s
	pb := getGather()
	buf := *pb
	defer func() { putGather(pb, buf) }()
	var gathered sentCount // not yet written
	write := func() bool {
		if len(buf) == 0 {
			return true
		}
		if ps.writeFrames(buf) != nil {
			return false
		}
		buf = buf[:0]
		s.countSentBy(&gathered)
		return true
	}
	for _, f := range ps.c.drain() {
		ps.c.took()
		if f.seq != 0 && f.seq <= ps.last {
			continue
		}
		n := len(buf)
		buf = ps.appendFrame(buf, f)
		if ps.unsent()+int64(len(buf)) > ps.p.limit {
			buf = buf[:n]
			if write() {
				ps.countSlowOnce()
				ps.closeSlow(fmt.Errorf("web: %d bytes unsent", ps.unsent()))
			}
			return false
		}
		gathered.add(f)
		if f.seq != 0 {
			ps.last = f.seq
		}
		if len(buf) >= maxGather && !write() {
			return false
		}
	}
	return write()
}

// unsent is the bytes handed to nbio that the kernel has not taken. nbio's
// own writes (pongs) are not counted in queued, which errs on the lenient
// side.
func (ps *pollSocket) unsent() int64 { return ps.queued.Load() - ps.written.Load() }

// wireSize is a server frame's size on the wire: header and payload.
func wireSize(data []byte) int64 {
	n := int64(len(data))
	switch {
	case n < 126:
		return n + 2
	case n < 1<<16:
		return n + 4
	default:
		return n + 10
	}
}
