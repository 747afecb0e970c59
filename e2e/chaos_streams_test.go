package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// streams reports whether the client takes the event stream
// (/games/GAME/events), the page's fallback where websockets are blocked,
// instead of a websocket: a third of the clients, with and without board
// frames, under the same kills and the same checks.
func (cl *chaosClient) streams() bool { return cl.idx%3 == 1 }

// stream is session over the event stream: it opens the stream from the
// cursor and applies its frames until it ends, checking that a line's
// event id is its seq (the Last-Event-ID an EventSource would resume
// from). It reports whether the stream opened.
func (cl *chaosClient) stream(ctx context.Context, hc *http.Client, addr string, after int64, store string) bool {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	url := fmt.Sprintf("http://%s/games/%s/events?after=%d&store=%s", addr, cl.game, after, store)
	if cl.boards() {
		url += "&board=1"
	}
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, url, nil)
	if err != nil {
		panic(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	// As long as a websocket's dial may take; the stream itself has none.
	slow := time.AfterFunc(3*time.Second, cancel)
	resp, err := hc.Do(req)
	if !slow.Stop() || err != nil || resp.StatusCode != http.StatusOK {
		if err == nil {
			resp.Body.Close()
		}
		cl.mu.Lock()
		cl.dialFails++
		cl.mu.Unlock()
		return false
	}
	defer resp.Body.Close()
	cl.mu.Lock()
	cl.conns++
	cl.streamConns++
	cl.panel = "" // a new stream starts with a whole panel
	cl.mu.Unlock()
	br := bufio.NewReader(resp.Body)
	id, named := "", false
	for n := 0; ; n++ {
		line, err := br.ReadString('\n')
		if err != nil {
			cl.mu.Lock()
			cl.drops++
			cl.mu.Unlock()
			return true
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			id, named = "", false // the event's end
		case strings.HasPrefix(line, "id: "):
			id = line[len("id: "):]
		case strings.HasPrefix(line, "event: "):
			named = true // a ping: no frame, as an EventSource's onmessage never sees it
		case strings.HasPrefix(line, "data: ") && !named:
			// The server's frames are one line of JSON each.
			var f frame
			if err := json.Unmarshal([]byte(line[len("data: "):]), &f); err != nil {
				cl.errs.add("client %d (%s) on %s: bad event %q (line %d of the stream from %d): %v; %s",
					cl.idx, cl.game, addr, line, n, after, err, cl.wires.around([]byte(line)))
				return true // resume from the cursor, as the page does
			}
			if f.T == "line" && id != strconv.FormatInt(f.Seq, 10) {
				cl.errs.add("client %d (%s) on %s: line seq %d came with event id %q", cl.idx, cl.game, addr, f.Seq, id)
			}
			cl.frame(addr, f)
			if f.T == "reset" {
				return true
			}
		}
	}
}
