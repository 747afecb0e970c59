package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestCursorGrammar: every resume cursor (after= on /live and /events,
// Last-Event-ID, since= on timeline.json) is read by one grammar, a seq as
// the server writes it: "0", or ASCII digits without a leading zero, up to
// 2^63-1, with no sign and no space. Anything else is a 400 that names the
// cursor, and on /live and /events a rejection counted with reason
// "cursor". Until 6 Dec 2026 strconv.ParseInt read them: "-0" was 0, a
// resume from the game's first line, and "+5" and "05" were 5.
func TestCursorGrammar(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("g1").chats(t, 2)...)
	bad := []string{"", "-0", "-1", "+5", " 5", "5 ", "05", "00", "0x5", "1e3", "5.0", "٥", "9223372036854775808", "99999999999999999999"}
	good := []string{"0", "5", "9223372036854775807"}
	rejected := func() float64 {
		return metric(t, "codemojex_web_upgrades_rejected_total", map[string]string{"reason": "cursor"})
	}
	for _, v := range bad {
		q := url.QueryEscape(v)
		for _, tc := range []struct {
			name, path, what string
			hdr              []string
			counted          bool
		}{
			{"live", "/games/g1/live?after=" + q, "after", nil, true},
			{"events", "/games/g1/events?after=" + q, "after", nil, true},
			{"timeline", "/games/g1/timeline.json?since=" + q, "since", nil, false},
		} {
			before := rejected()
			resp, body := e.send(http.MethodGet, tc.path, tc.hdr...)
			if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(body, tc.what+": want a seq") {
				t.Errorf("%s %q: HTTP %d %q, want 400 %q", tc.name, v, resp.StatusCode, body, tc.what+": want a seq…")
			}
			if n := rejected() - before; tc.counted && n != 1 {
				t.Errorf("%s %q: %v cursor rejections counted, want 1", tc.name, v, n)
			}
		}
		// A header's value loses its surrounding space (RFC 9110, 5.5):
		// " 5" is "5" there, and an empty one is none.
		if v == "" || strings.TrimSpace(v) != v {
			continue
		}
		resp, body := e.send(http.MethodGet, "/games/g1/events?after=0", "Last-Event-ID", v)
		if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(body, "Last-Event-ID: want a seq") {
			t.Errorf("Last-Event-ID %q: HTTP %d %q, want 400", v, resp.StatusCode, body)
		}
	}
	for _, v := range good {
		// Past the cursor, a plain GET is no handshake (426), a HEAD of
		// a stream its head, and since= a page.
		if resp, body := e.send(http.MethodGet, "/games/g1/live?after="+v); resp.StatusCode != http.StatusUpgradeRequired {
			t.Errorf("live after=%s: HTTP %d %q, want 426", v, resp.StatusCode, body)
		}
		if resp, _ := e.send(http.MethodHead, "/games/g1/events?after="+v); resp.StatusCode != http.StatusOK {
			t.Errorf("events after=%s: HTTP %d, want 200", v, resp.StatusCode)
		}
		if resp, _ := e.send(http.MethodHead, "/games/g1/events?after=0", "Last-Event-ID", v); resp.StatusCode != http.StatusOK {
			t.Errorf("events Last-Event-ID %s: HTTP %d, want 200", v, resp.StatusCode)
		}
		if resp, body := e.send(http.MethodGet, "/games/g1/timeline.json?since="+v); resp.StatusCode != http.StatusOK {
			t.Errorf("timeline since=%s: HTTP %d %q, want 200", v, resp.StatusCode, body)
		}
	}
}
