package nbiocheck_test

import (
	"strings"
	"testing"

	"github.com/codemojex/feed/internal/nbiocheck"
)

// The check passes a sound event stream, however the kernel took it, and
// reports the first bad line: a cut event, a data line that is not JSON, a
// head that is not the stream's.
func TestEventsChecked(t *testing.T) {
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nConnection: close\r\n\r\n"
	line := `{"t":"line","id":"EVT-1","html":"` + strings.Repeat("x", 900) + `"}`
	sound := head + "event: ping\ndata: 20000\n\n" + "data: {\"t\":\"state\"}\n\n" + "id: 7\ndata: " + line + "\n\n" + "event: ping\ndata: 20000\n\n" + "data: {\"t\":\"reset\"}\n\n"
	for _, tc := range []struct {
		name, out, want string
	}{
		{"sound", sound, ""},
		{"cut event", head + "id: 7\ndata: " + line[:300] + "id: 8\ndata: {}\n\n", "a data line that is not one JSON object"},
		{"not JSON", head + "data: {\"t\":\"line\"\n\n", "a data line that is not one JSON object"},
		{"two data lines", head + "data: {}\ndata: {}\n\n", "a data line that is not one JSON object"},
		{"id without data", head + "id: 7\n\n", "an event with an id or a name and no data"},
		{"ping without data", head + "event: ping\n\n", "an event with an id or a name and no data"},
		{"ping with JSON", head + "event: ping\ndata: {}\n\n", "a ping whose data is not its period in milliseconds"},
		{"ping with an id", head + "event: ping\nid: 7\ndata: 20000\n\n", "a misplaced or malformed id line"},
		{"a comment", head + ": ping\n\n", "a line that is no part of an event"},
		{"bad id", head + "id: x\ndata: {}\n\n", "a misplaced or malformed id line"},
		{"stray line", head + "event: line\ndata: {}\n\n", "a line that is no part of an event"},
		{"not 200", "HTTP/1.1 500 Internal Server Error\r\n\r\n", "a response head that is not 200 OK"},
	} {
		for _, step := range []int{1, 7, 4096} { // how the kernel took it
			var got []string
			e := nbiocheck.NewEvents(func(m string) { got = append(got, m) })
			for b := []byte(tc.out); len(b) > 0; {
				n := min(step, len(b))
				e.Write(b[:n])
				b = b[n:]
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("%s (writes of %d): reported %q", tc.name, step, got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("%s (writes of %d): reported %q, want one report of %q", tc.name, step, got, tc.want)
			}
		}
	}
}
