package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/static"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

func TestGamePage(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	e.upsert(
		g.ev(t, event.KindGameStarted, "title", "Friday <night>", "rounds", "3", "code_length", "4", "palette", "🍎🍌🍇🍒🥝🍋"),
		g.ev(t, event.KindPlayerJoined, "player", "ada", "avatar", "🦉"),
	)
	resp, page := e.get("/games/g1")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	max, err := e.db.MaxSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if seq := pageSeq(t, page); seq != max {
		t.Fatalf("embedded seq %d, want %d", seq, max)
	}
	for _, want := range []string{
		`<ol id="timeline"`, `id="conn"`, `data-state="connecting"`, `id="scoreboard"`, "ada", "🦉",
		"Friday &lt;night&gt;", `data-live="/games/g1/live"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := len(pageLines(page)); n != 2 {
		t.Fatalf("page has %d lines, want 2", n)
	}
}

func TestOlderPagination(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3 })
	evs := e.gen("g1").chats(t, 7)
	e.upsert(evs...)
	want := reverse(evtIDs(evs))

	_, page := e.get("/games/g1")
	got := pageLines(page)
	if !eq(got, want[:3]) {
		t.Fatalf("first page %v, want %v", got, want[:3])
	}
	link := regexp.MustCompile(`<a id="older"[^>]*data-before="([^"]+)"`).FindStringSubmatch(page)
	if link == nil {
		t.Fatal("no older link")
	}
	// The script fetches the fragment from the link's data-before.
	href := "/games/g1/older?before=" + link[1]
	for _, step := range []struct {
		want []string
		more string
	}{{want[3:6], "true"}, {want[6:], "false"}} {
		resp, frag := e.get(href)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", href, resp.StatusCode)
		}
		if got := pageLines(frag); !eq(got, step.want) {
			t.Fatalf("GET %s: %v, want %v", href, got, step.want)
		}
		if m := resp.Header.Get("X-More"); m != step.more {
			t.Fatalf("GET %s: X-More %q, want %q", href, m, step.more)
		}
		href = "/games/g1/older?before=" + step.want[len(step.want)-1]
	}
	if resp, _ := e.get("/games/g1/older?before=nope"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad cursor: %d, want 400", resp.StatusCode)
	}
}

// TestOlderUnknownGame: the "older lines" fragment of a game the store does
// not know is a 404, as the page of the same lines (?before=) is; a known
// game paged past its oldest line is an empty fragment, X-More false. The
// fragment was 200 and empty for any game name. The game's live page is
// not among them: it is served for a game with no line yet, and waits for
// its first.
func TestOlderUnknownGame(t *testing.T) {
	e := MustOpenEnv(t, nil)
	evs := e.gen("g1").chats(t, 2)
	e.upsert(evs...)
	oldest := evs[0].EvtID
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/games/nobody/older?before=" + oldest, http.StatusNotFound},
		{"/games/nobody?before=" + oldest, http.StatusNotFound},
		{"/games/g1/older?before=" + oldest, http.StatusOK},
		{"/games/g1?before=" + oldest, http.StatusOK},
		{"/games/nobody", http.StatusOK},
	} {
		resp, body := e.get(tc.path)
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.code)
		}
		if tc.code == http.StatusOK && len(pageLines(body)) != 0 {
			t.Errorf("GET %s: lines %v, want none before the oldest", tc.path, pageLines(body))
		}
	}
	if resp, _ := e.get("/games/g1/older?before=" + oldest); resp.Header.Get("X-More") != "false" {
		t.Errorf("X-More %q past the oldest line, want false", resp.Header.Get("X-More"))
	}
}

// The "older lines" link, followed rather than taken by the script (a new
// tab, no script), leads to pages of the lines before it: each a whole page
// (a title, the way back to the live timeline) of the next lines, newest
// first, with a link to the page before it, the last without one. It led
// to the fragment the script fetches, bare list items.
func TestOlderPage(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3 })
	evs := e.gen("g1").chats(t, 7)
	e.upsert(evs...)
	want := reverse(evtIDs(evs))
	hrefRe := regexp.MustCompile(`<a id="older" class="older" href="([^"]+)"`)

	_, page := e.get("/games/g1")
	var got []string
	for i := 0; ; i++ {
		m := hrefRe.FindStringSubmatch(page)
		if m == nil {
			break
		}
		if i == 5 {
			t.Fatalf("still an older link after %d pages", i)
		}
		href := strings.ReplaceAll(m[1], "&amp;", "&")
		if !strings.HasPrefix(href, "/games/g1?before=evt_") {
			t.Fatalf("older link %q, want /games/g1?before=EVT_ID", href)
		}
		resp, body := e.get(href)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s", href, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		for _, part := range []string{"<title>Older lines: g1 · codemojex feed</title>", `href="/games/g1"`, "<h1>Older lines: g1</h1>"} {
			if !strings.Contains(body, part) {
				t.Fatalf("GET %s: no %q in\n%s", href, part, body)
			}
		}
		got = append(got, pageLines(body)...)
		page = body
	}
	if !eq(got, want[3:]) {
		t.Fatalf("the older pages held %v, want %v", got, want[3:])
	}

	for _, tc := range []struct {
		path string
		code int
	}{
		{"/games/g1?before=nope", http.StatusBadRequest},
		{"/games/nobody?before=" + evs[0].EvtID, http.StatusNotFound},
	} {
		if resp, _ := e.get(tc.path); resp.StatusCode != tc.code {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.code)
		}
	}
}

func TestIndex(t *testing.T) {
	e := MustOpenEnv(t, nil)
	e.upsert(e.gen("alpha").chats(t, 2)...)
	e.upsert(e.gen("beta").chats(t, 1)...)
	for _, path := range []string{"/", "/fragments/games"} {
		resp, body := e.get(path)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		for _, want := range []string{`href="/games/alpha"`, `href="/games/beta"`, `<time class="rel" datetime="`} {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s lacks %q", path, want)
			}
		}
	}
}

// TestIndexBounded: the index lists the 200 most recently active games
// and says how many older ones it leaves out, on the page and in the
// fragment its tabs poll every 3 s.
func TestIndexBounded(t *testing.T) {
	e := MustOpenEnv(t, nil)
	var evs []store.Event
	for i := range 203 {
		evs = append(evs, e.gen(fmt.Sprintf("g%03d", i)).chats(t, 1)...)
	}
	e.upsert(evs[:3]...) // the oldest activity
	e.upsert(evs[3:]...)
	for _, path := range []string{"/", "/fragments/games"} {
		_, body := e.get(path)
		if n := strings.Count(body, "<tr data-game="); n != 200 {
			t.Errorf("GET %s: %d games listed, want 200", path, n)
		}
		if !strings.Contains(body, "3 older games not listed") {
			t.Errorf("GET %s does not say how many games it leaves out", path)
		}
		if strings.Contains(body, `href="/games/g000"`) || !strings.Contains(body, `href="/games/g202"`) {
			t.Errorf("GET %s: the oldest games listed, or the newest left out", path)
		}
	}
}

// countingStore is the real store, counting the index's reads of it.
type countingStore struct {
	*store.DB
	recent atomic.Int64
}

func (c *countingStore) RecentGames(ctx context.Context, n int) ([]store.Game, int, error) {
	c.recent.Add(1)
	return c.DB.RecentGames(ctx, n)
}

// TestIndexReadsShared: finding the most recent games visits every games
// row, so the index's requests share one read of them per second, however
// many tabs poll; a game that starts is listed a second later at most.
func TestIndexReadsShared(t *testing.T) {
	var cs countingStore
	e := MustOpenEnv(t, func(c *web.Config) {
		cs.DB = c.Store.(*store.DB)
		c.Store = &cs
	})
	e.upsert(e.gen("alpha").chats(t, 1)...)
	const requests = 24 // under MaxRequestsPerClient's 32 in flight
	start := time.Now()
	var wg sync.WaitGroup
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/fragments/games"
			if i%4 == 0 {
				path = "/"
			}
			resp, body := e.get(path)
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, `href="/games/alpha"`) {
				t.Errorf("GET %s: %d, alpha listed: %v", path, resp.StatusCode, strings.Contains(body, `href="/games/alpha"`))
			}
		}()
	}
	wg.Wait()
	// One read per second begun, at most.
	if reads, most := cs.recent.Load(), 1+int64(time.Since(start)/time.Second); reads > most {
		t.Errorf("%d requests read the games %d times in %v, want at most %d", requests, reads, time.Since(start), most)
	}
	e.upsert(e.gen("beta").chats(t, 1)...)
	waitFor(t, 5*time.Second, "beta listed", func() bool {
		_, body := e.get("/fragments/games")
		return strings.Contains(body, `href="/games/beta"`)
	})
}

func TestStaticAssets(t *testing.T) {
	e := MustOpenEnv(t, nil)
	_, page := e.get("/games/g1")
	for _, name := range []string{"app.js", "app.css"} {
		p := static.Path(name)
		if !regexp.MustCompile(`^/static/` + strings.Split(name, ".")[0] + `\.[0-9a-f]{10}\.` + strings.Split(name, ".")[1] + `$`).MatchString(p) {
			t.Fatalf("hashed path %q", p)
		}
		if !strings.Contains(page, `"`+p+`"`) {
			t.Errorf("page does not reference %s", p)
		}
		resp, body := e.get(p)
		if resp.StatusCode != 200 || len(body) == 0 {
			t.Fatalf("GET %s: %d", p, resp.StatusCode)
		}
		if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("GET %s: Cache-Control %q", p, cc)
		}
		if resp, _ := e.get("/static/" + name); resp.StatusCode != 404 {
			t.Errorf("unhashed /static/%s: %d, want 404", name, resp.StatusCode)
		}
	}
	resp, _ := e.get(static.Path("app.js"))
	if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "javascript") {
		t.Errorf("app.js Content-Type %q", ct)
	}
}

// TestMissesNotKept: what a replica answers that may be otherwise soon is
// not kept by caches. A hashed asset it lacks (a page of a newer build,
// from another replica mid-deploy, asks for it) is 404 no-store: without a
// Cache-Control a 404 is cacheable by heuristics, and a CDN (3 minutes on
// Cloudflare, an hour on Fastly) kept the new build's script missing after
// every replica had it. The older-lines fragment says no-cache as every
// other generated response does: a late line can still land below its
// cursor.
func TestMissesNotKept(t *testing.T) {
	e := MustOpenEnv(t, nil)
	evs := e.gen("g1").chats(t, 3)
	e.upsert(evs...)
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{strings.Replace(static.Path("app.js"), "/app.", "/app.0", 1), http.StatusNotFound, "no-store"},
		{"/static/app.0123456789.js", http.StatusNotFound, "no-store"},
		{"/static/a/" + strings.TrimPrefix(static.Path("app.js"), static.Prefix), http.StatusNotFound, "no-store"},
		{"/games/g1/older?before=" + evs[2].EvtID, http.StatusOK, "no-cache"},
	} {
		resp, _ := e.get(tc.path)
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.code)
		}
		if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, tc.want) {
			t.Errorf("GET %s: Cache-Control %q, want %s", tc.path, cc, tc.want)
		}
	}
}

func TestHealthAndReady(t *testing.T) {
	tests := []struct {
		name     string
		ready    func(context.Context) error
		want     int
		wantBody string
	}{
		{"no check", nil, 200, "ready"},
		{"ready", func(context.Context) error { return nil }, 200, "ready"},
		{"redis down", func(context.Context) error { return errors.New("redis: connection refused") }, 503, "redis: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := MustOpenEnv(t, func(c *web.Config) { c.Ready = tt.ready })
			if resp, _ := e.get("/healthz"); resp.StatusCode != 200 {
				t.Fatalf("healthz: %d", resp.StatusCode)
			}
			resp, body := e.get("/readyz")
			if resp.StatusCode != tt.want || !strings.Contains(body, tt.wantBody) {
				t.Fatalf("readyz: %d %q, want %d with %q", resp.StatusCode, body, tt.want, tt.wantBody)
			}
		})
	}
}

// TestProbesNotCached: /healthz and /readyz, ready or not, say
// Cache-Control: no-store, so a probe that goes through a cache (a CDN, a
// proxy in front) never reads a stale answer. /healthz said nothing, and a
// cache could keep its 200 by heuristics past the process's death.
func TestProbesNotCached(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ready func(context.Context) error
	}{
		{"ready", nil},
		{"not ready", func(context.Context) error { return errors.New("redis: connection refused") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := MustOpenEnv(t, func(c *web.Config) { c.Ready = tc.ready })
			for _, path := range []string{"/healthz", "/readyz"} {
				if resp, _ := e.get(path); resp.Header.Get("Cache-Control") != "no-store" {
					t.Errorf("GET %s: %d, Cache-Control %q, want no-store", path, resp.StatusCode, resp.Header.Get("Cache-Control"))
				}
			}
		})
	}
}

// TestStoreReadTimeoutIs503: a page or data request whose store reads
// ran out of their time (readTimeout, 10 s; here shortened so that every
// read finds its deadline passed) is answered 503 with Retry-After, as a
// server too busy for now, where it was a 500, the answer to a fault that
// will not pass by itself.
func TestStoreReadTimeoutIs503(t *testing.T) {
	// Registered before the server's Close: restored once it is closed.
	t.Cleanup(web.SetReadTimeout(time.Nanosecond))
	e := MustOpenEnv(t, nil)
	evs := e.gen("g1").chats(t, 2)
	e.upsert(evs...)
	for _, path := range []string{"/", "/fragments/games", "/games/g1", "/games/g1?before=" + evs[1].EvtID,
		"/games/g1/older?before=" + evs[1].EvtID, "/games/g1/replay", "/games/g1/timeline.json", "/games/g1/timeline.json?since=0"} {
		resp, body := e.get(path)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("GET %s, its reads timed out: %d, Retry-After %q, %q; want 503 with Retry-After",
				path, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
}

func TestStatus(t *testing.T) {
	st := feed.Status{
		Group: "feed", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Renderers: []string{"r1"},
		Streams: []feed.StreamStatus{{
			Stream: event.StreamKey("g1"), Game: "g1", Length: 42, Lag: 3, Pending: 2,
			OldestPendingIdle: 31 * time.Second, Dead: 1,
			Consumers: []feed.ConsumerStatus{
				{Name: "r1", Pending: 0, Idle: time.Second, Alive: true},
				{Name: "<r2>", Pending: 2, Idle: 31 * time.Second},
			},
		}},
	}
	e := MustOpenEnv(t, func(c *web.Config) {
		c.Status = func(context.Context) (feed.Status, error) { return st, nil }
	})
	resp, body := e.get("/api/status")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("api: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got web.APIStatus
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	// The web side's keys are snake_case as the rest of the document's:
	// they were Go's field names (FramesSent) until 5 Dec 2026.
	var raw struct {
		Web map[string]int64 `json:"web"`
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw.Web["frames_sent"]; !ok || len(raw.Web) != reflect.TypeOf(web.Stats{}).NumField() {
		t.Errorf("api status web keys %v: want every counter, frames_sent among them", slices.Sorted(maps.Keys(raw.Web)))
	}
	for k := range raw.Web {
		if !regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`).MatchString(k) {
			t.Errorf("api status web key %q: want snake_case", k)
		}
	}
	if got.Group != "feed" || len(got.Streams) != 1 || got.Streams[0].Pending != 2 ||
		got.Streams[0].OldestPendingIdle != 31*time.Second || len(got.Streams[0].Consumers) != 2 {
		t.Fatalf("api status %+v", got)
	}
	_, page := e.get("/status")
	for _, want := range []string{"g1", "&lt;r2&gt;", ">42<", "31.0s", `id="streams"`, `data-fragment="/fragments/status"`} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}

	// The fragment status.js polls is the same table, without the page.
	resp, frag := e.get("/fragments/status")
	if resp.StatusCode != 200 || strings.Contains(frag, "<html") {
		t.Fatalf("status fragment: %d %.80q", resp.StatusCode, frag)
	}
	for _, want := range []string{"g1", "&lt;r2&gt;", ">42<", "31.0s", `id="streams"`} {
		if !strings.Contains(frag, want) {
			t.Errorf("status fragment lacks %q", want)
		}
	}

	// Without a status source the page and its fragment say so and the API
	// answers 503.
	e2 := MustOpenEnv(t, nil)
	if resp, body := e2.get("/fragments/status"); resp.StatusCode != 200 || !strings.Contains(body, "no status source") {
		t.Fatalf("fragment without source: %d %s", resp.StatusCode, body)
	}
	if resp, body := e2.get("/api/status"); resp.StatusCode != 503 || !strings.Contains(body, "no status source") {
		t.Fatalf("api without source: %d %s", resp.StatusCode, body)
	}
}

func TestReplay(t *testing.T) {
	e := MustOpenEnv(t, nil)
	evs := e.gen("g1").chats(t, 4)
	e.upsert(evs[0], evs[3])
	e.upsert(evs[1], evs[2])
	resp, page := e.get("/games/g1/replay")
	if resp.StatusCode != 200 || !strings.Contains(page, `data-timeline="/games/g1/timeline.json"`) || !strings.Contains(page, `id="pos"`) {
		t.Fatalf("replay page: %d", resp.StatusCode)
	}
	resp, body := e.get("/games/g1/timeline.json")
	if resp.StatusCode != 200 {
		t.Fatalf("timeline: %d", resp.StatusCode)
	}
	var tl web.TimelinePage
	if err := json.Unmarshal([]byte(body), &tl); err != nil {
		t.Fatal(err)
	}
	if tl.Next != "" {
		t.Fatalf("timeline of 4 lines has a next page %q", tl.Next)
	}
	var got []string
	for _, x := range tl.Entries {
		got = append(got, x.ID)
		if !strings.HasPrefix(x.HTML, `<li id="`+x.ID+`"`) || x.At.IsZero() {
			t.Fatalf("entry %+v", x)
		}
	}
	if !eq(got, evtIDs(evs)) {
		t.Fatalf("timeline %v, want EVT order %v", got, evtIDs(evs))
	}
	if resp, _ := e.get("/games/never-played/replay"); resp.StatusCode != 404 {
		t.Fatalf("replay of an unknown game: %d, want 404", resp.StatusCode)
	}
}

// TestTimelineSince: a replay goes on from the seq its first page gives
// with ?since=SEQ, which brings what was committed after, late lines with
// old EVT ids included, in seq order: the only way a replay loaded before
// them gets them.
func TestTimelineSince(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.StoreID = "host-a" })
	evs := e.gen("g1").chats(t, 4)
	e.upsert(evs[0], evs[2])
	first := timelinePage(t, e, "/games/g1/timeline.json")
	max, err := e.db.MaxSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if first.Seq != max || len(first.Entries) != 2 {
		t.Fatalf("first page: seq %d with %d entries, want the store's %d and 2", first.Seq, len(first.Entries), max)
	}
	seqs := e.upsert(evs[1], evs[3]) // evs[1] is late: below every page read
	p := timelinePage(t, e, fmt.Sprintf("/games/g1/timeline.json?since=%d", first.Seq))
	var got []string
	for _, x := range p.Entries {
		got = append(got, x.ID)
	}
	if want := evtIDs(evs[1:2:2]); len(got) != 2 || got[0] != want[0] || got[1] != evs[3].EvtID || p.Seq != seqs[1] || p.Next != "" {
		t.Fatalf("since %d: %v seq %d next %q, want [%s %s] in seq order, seq %d, no next", first.Seq, got, p.Seq, p.Next, evs[1].EvtID, evs[3].EvtID, seqs[1])
	}
	if p.Store != "host-a" || first.Store != "host-a" {
		t.Fatalf("store %q, first page's %q", p.Store, first.Store)
	}
	if p := timelinePage(t, e, fmt.Sprintf("/games/g1/timeline.json?since=%d", seqs[1])); len(p.Entries) != 0 || p.Seq != seqs[1] {
		t.Fatalf("nothing since: %d entries, seq %d", len(p.Entries), p.Seq)
	}
	for _, q := range []string{"since=x", "since=-1", "since=1&after=" + evs[0].EvtID} {
		if resp, _ := e.get("/games/g1/timeline.json?" + q); resp.StatusCode != 400 {
			t.Errorf("%s: %d, want 400", q, resp.StatusCode)
		}
	}
}

// TestTimelineLastPageHasNoNext: the last page of a game carries no next
// (docs/contracts.md), also when it is full: a game of four lines comes in
// two pages of two. A page cut at TimelineLines carried next whatever
// followed, and the client asked once more for an empty page.
func TestTimelineLastPageHasNoNext(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.TimelineLines = 2 })
	evs := e.gen("g1").chats(t, 4)
	e.upsert(evs...)
	first := timelinePage(t, e, "/games/g1/timeline.json")
	if len(first.Entries) != 2 || first.Next != evs[1].EvtID {
		t.Fatalf("first page: %d entries, next %q, want 2 and %s", len(first.Entries), first.Next, evs[1].EvtID)
	}
	last := timelinePage(t, e, "/games/g1/timeline.json?after="+first.Next)
	if len(last.Entries) != 2 || last.Entries[1].ID != evs[3].EvtID || last.Next != "" {
		t.Fatalf("last page: %d entries, next %q, want 2 ending at %s and no next", len(last.Entries), last.Next, evs[3].EvtID)
	}
}

// TestTimelineUnknownGame: the replay data of a game the store does not
// know, never played or deleted since (feedctl prune), is a 404 on every
// form of timeline.json, as /older and ?before= are (TestOlderUnknownGame)
// and as the replay page is; a known game paged or polled past its last
// line is an empty 200. timeline.json answered an empty 200 for any valid
// name: a replay open on a deleted game asked ?since= every 5 s for ever.
func TestTimelineUnknownGame(t *testing.T) {
	e := MustOpenEnv(t, nil)
	evs := e.gen("g1").chats(t, 2)
	seqs := e.upsert(evs...)
	e.upsert(e.gen("gone").chats(t, 1)...)
	if _, err := e.db.DeleteGame(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	last := evs[1].EvtID
	for _, tc := range []struct {
		path    string
		code    int
		entries int
	}{
		{"/games/nobody/timeline.json", http.StatusNotFound, 0},
		{"/games/nobody/timeline.json?after=" + last, http.StatusNotFound, 0},
		{"/games/nobody/timeline.json?since=0", http.StatusNotFound, 0},
		{"/games/gone/timeline.json", http.StatusNotFound, 0},
		{"/games/gone/timeline.json?since=0", http.StatusNotFound, 0},
		{"/games/g1/timeline.json", http.StatusOK, 2},
		{"/games/g1/timeline.json?after=" + last, http.StatusOK, 0},
		{fmt.Sprintf("/games/g1/timeline.json?since=%d", seqs[1]), http.StatusOK, 0},
	} {
		resp, body := e.get(tc.path)
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.code)
			continue
		}
		if tc.code != http.StatusOK {
			continue
		}
		var p web.TimelinePage
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatalf("GET %s: %v", tc.path, err)
		}
		if len(p.Entries) != tc.entries {
			t.Errorf("GET %s: %d entries, want %d", tc.path, len(p.Entries), tc.entries)
		}
	}
}

func timelinePage(tb testing.TB, e *env, path string) web.TimelinePage {
	tb.Helper()
	resp, body := e.get(path)
	var p web.TimelinePage
	if err := json.Unmarshal([]byte(body), &p); err != nil || resp.StatusCode != 200 {
		tb.Fatalf("%s: %d %v %s", path, resp.StatusCode, err, body)
	}
	return p
}

func TestMetrics(t *testing.T) {
	e := MustOpenEnv(t, nil)
	w := e.dial("g1", 0)
	w.next()
	e.upsert(e.gen("g1").chats(t, 1)...)
	w.lines(1)
	resp, body := e.get("/metrics")
	if resp.StatusCode != 200 {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	for _, name := range []string{
		"codemojex_web_websocket_clients", `codemojex_web_frames_sent_total{type="line"}`,
		"codemojex_web_slow_client_closes_total", "codemojex_web_tail_lag_seconds_bucket", "codemojex_web_tail_errors_total",
	} {
		if !strings.Contains(body, name) {
			t.Errorf("metrics lack %s", name)
		}
	}
}

// TestOlderLastFullPageHasNoLink: a page of exactly PageLines lines with
// none before it offers no "older lines": not the game page, not the older
// page, not the fragment's X-More. A full last page did, whatever followed,
// and led to a page with no lines ("No older lines."), as timeline.json's
// next did until TestTimelineLastPageHasNoNext.
func TestOlderLastFullPageHasNoLink(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3 })
	evs := e.gen("g1").chats(t, 6)
	e.upsert(evs...)
	want := reverse(evtIDs(evs))
	linkRe := regexp.MustCompile(`<a id="older"[^>]*href="([^"]+)"`)

	_, page := e.get("/games/g1")
	if got := pageLines(page); !eq(got, want[:3]) {
		t.Fatalf("game page %v, want %v", got, want[:3])
	}
	if linkRe.FindStringSubmatch(page) == nil {
		t.Fatal("game page: no older link, with 3 lines before its last")
	}
	resp, frag := e.get("/games/g1/older?before=" + want[2])
	if got := pageLines(frag); !eq(got, want[3:]) {
		t.Fatalf("fragment %v, want %v", got, want[3:])
	}
	if m := resp.Header.Get("X-More"); m != "false" {
		t.Errorf("fragment of the last 3 lines: X-More %q, want false", m)
	}
	_, older := e.get("/games/g1?before=" + want[2])
	if got := pageLines(older); !eq(got, want[3:]) {
		t.Fatalf("older page %v, want %v", got, want[3:])
	}
	if m := linkRe.FindStringSubmatch(older); m != nil {
		t.Errorf("the last older page links to %s", m[1])
	}

	// A game of exactly one page has nothing older.
	f := MustOpenEnv(t, func(c *web.Config) { c.PageLines = 3 })
	f.upsert(f.gen("g2").chats(t, 3)...)
	if _, page := f.get("/games/g2"); linkRe.FindStringSubmatch(page) != nil {
		t.Error("a game of 3 lines, one page: its page offers older lines")
	}
}
