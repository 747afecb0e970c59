package web

import (
	"fmt"
	"math"
	"net/http"
)

// parseCursor parses a resume cursor, a seq, from the parameter or header
// named what: after= on /live and /events, Last-Event-ID, since= on
// timeline.json. A cursor is a seq as the server writes it (a line's seq,
// a page's data-seq, an event's id): "0" or ASCII digits without a leading
// zero, at most 2^63-1, with no sign and no space. strconv.ParseInt alone
// also took "-0", "+5" and "05", which no page sends: "-0" passed as 0,
// the whole game from its first line (docs/contracts.md, "HTTP and the
// websocket"; TestCursorGrammar).
func parseCursor(v, what string) (int64, error) {
	n, ok := seqOf(v)
	if !ok {
		return 0, fmt.Errorf("%s: want a seq: 0, or a decimal integer without a sign, a space or a leading zero", what)
	}
	return n, nil
}

// seqOf reads v as parseCursor's grammar has it.
func seqOf(v string) (int64, bool) {
	if v == "" || len(v) > 1 && v[0] == '0' {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		d := v[i]
		if d < '0' || d > '9' {
			return 0, false
		}
		if n > (math.MaxInt64-int64(d-'0'))/10 {
			return 0, false // past int64: no seq the store gives
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
}

// streamCursor is an event stream's resume cursor: Last-Event-ID when the
// client sends one (an EventSource reconnecting by itself), else after.
func streamCursor(r *http.Request) (int64, error) {
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		return parseCursor(v, "Last-Event-ID")
	}
	return parseCursor(r.URL.Query().Get("after"), "after")
}
