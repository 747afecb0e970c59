package nbiocheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Events checks one event stream's output as the kernel takes it (nbio's
// OnWrittenSize), as Frames checks a websocket's: a response head that
// ends in a blank line, then only whole events of the renderer's form (an
// optional "id: SEQ" line, one "data: " line holding one JSON object, a
// blank line) and pings ("event: ping", a "data: " line holding the period
// in milliseconds, a blank line). It reports the first bad line with the
// event before it, and checks no further.
type Events struct {
	report func(misuse string)

	off    int64  // bytes seen
	head   []byte // the response head so far; nil once whole
	line   []byte // the current line so far
	id     bool   // the current event has its id line
	data   bool   // the current event has its data line
	ping   bool   // the current event is a ping
	prev   string // the event before, described
	events int64
	bad    bool
}

// NewEvents returns a check of one event stream's output that calls report
// with the first bad line.
func NewEvents(report func(misuse string)) *Events {
	return &Events{report: report, head: []byte{}}
}

// headEnd ends a response head.
var headEnd = []byte("\r\n\r\n")

// Write takes the next bytes written to the stream.
func (e *Events) Write(b []byte) {
	for len(b) > 0 && !e.bad {
		if e.head != nil {
			e.head = append(e.head, b[0])
			b = b[1:]
			e.off++
			if bytes.HasSuffix(e.head, headEnd) {
				if !bytes.HasPrefix(e.head, []byte("HTTP/1.1 200 OK\r\n")) {
					e.fail("a response head that is not 200 OK", e.head)
					return
				}
				e.head = nil
			} else if len(e.head) > 8<<10 {
				e.fail("a response head over 8 KiB", e.head)
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			e.line = append(e.line, b...)
			e.off += int64(len(b))
			return
		}
		e.line = append(e.line, b[:i]...)
		e.off += int64(i + 1)
		b = b[i+1:]
		e.takeLine()
		e.line = e.line[:0]
	}
}

// takeLine checks one whole line of the stream.
func (e *Events) takeLine() {
	l := e.line
	switch {
	case len(l) == 0:
		if (e.id || e.ping) && !e.data {
			e.fail("an event with an id or a name and no data", l)
			return
		}
		if e.data {
			e.events++
		}
		e.id, e.data, e.ping = false, false, false
	case string(l) == "event: ping":
		if e.id || e.data || e.ping {
			e.fail("a misplaced event line", l)
		}
		e.ping = true
	case bytes.HasPrefix(l, []byte("id: ")):
		seq, err := strconv.ParseInt(string(l[4:]), 10, 64)
		if e.id || e.data || e.ping || err != nil || seq <= 0 {
			e.fail("a misplaced or malformed id line", l)
		}
		e.id = true
	case e.ping && bytes.HasPrefix(l, []byte("data: ")):
		ms, err := strconv.ParseInt(string(l[6:]), 10, 64)
		if e.data || err != nil || ms <= 0 {
			e.fail("a ping whose data is not its period in milliseconds", l)
			return
		}
		e.data = true
		e.prev = describeLine(l)
	case bytes.HasPrefix(l, []byte("data: ")):
		d := l[6:]
		if e.data || len(d) == 0 || d[0] != '{' || !json.Valid(d) {
			e.fail("a data line that is not one JSON object", l)
			return
		}
		e.data = true
		e.prev = describeLine(l)
	default:
		e.fail("a line that is no part of an event", l)
	}
}

func describeLine(l []byte) string {
	if len(l) > 96 {
		return fmt.Sprintf("%d bytes %q … %q", len(l), l[:48], l[len(l)-48:])
	}
	return fmt.Sprintf("%d bytes %q", len(l), l)
}

func (e *Events) fail(what string, l []byte) {
	e.bad = true
	if e.report != nil {
		e.report(fmt.Sprintf("nbiocheck: %s on the event stream, event %d, line ending at byte %d: %s; the event before: %s",
			what, e.events+1, e.off, describeLine(l), e.prev))
	}
}
