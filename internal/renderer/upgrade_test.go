package renderer_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/storefile"
)

// TestUpgradeOverOldStoreAndGroup: a host's renderer upgraded from a
// release of schema version 2 (before a store kept its positions), over
// what that release left: a store holding the game's lines, with its
// payloads as it encoded them, and a group that acked their entries. The
// new renderer migrates the store and, finding no position, catches it up
// from the stream: every entry comes again as a duplicate of the old
// release's line, so nothing is dead-lettered (a payload encoded otherwise
// would be a conflict), no count doubles, and the lines keep their seqs
// and the store its id, which browsers' cursors name. Then a newer
// writer's entries of known kinds carrying a field this release does not
// know are stored, not dead-lettered (docs/contracts.md, "Entries").
func TestUpgradeOverOldStoreAndGroup(t *testing.T) {
	ctx := context.Background()
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	const game = "upg"
	s := event.StreamKey(game)
	mint := event.NewMinter(5)
	ids := chats(t, rdb, mint, game, 30, `<b>old</b> & "q" é 🦊 `+"\u2028")

	// The old release's renderer read the entries, stored and acked them.
	if err := rdb.XGroupCreateMkStream(ctx, s, "feed", "0").Err(); err != nil {
		t.Fatal(err)
	}
	got, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "feed", Consumer: "r1", Streams: []string{s, ">"}, Count: 100}).Result()
	if err != nil || len(got) != 1 || len(got[0].Messages) != len(ids) {
		t.Fatalf("old release's read: %v, %v", got, err)
	}
	xs := got[0].Messages
	path := filepath.Join(t.TempDir(), "feed.db")
	storefile.AtSchema(t, path, 2, func(exec storefile.Exec) {
		exec(`INSERT INTO games (name, events) VALUES (?, ?)`, game, len(xs))
		for _, x := range xs {
			p := map[string]string{}
			for k, v := range x.Values {
				if k != event.FieldID {
					p[k] = v.(string)
				}
			}
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			exec(`INSERT INTO events (evt_id, game, kind, payload, html, stream_id, renderer, attempts, stored_at)
				VALUES (?, ?, 'chat', ?, '<p>as the old release drew it</p>', ?, 'r1', 1, 1)`, x.Values[event.FieldID], game, string(b), x.ID)
		}
	})
	for _, x := range xs {
		if err := rdb.XAck(ctx, s, "feed", x.ID).Err(); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var oldID string
	err = raw.QueryRow(`SELECT value FROM meta WHERE key = 'store_id'`).Scan(&oldID)
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}

	m := MustRunMain(t, rs.URL(), path, "r1")
	last := xs[len(xs)-1].ID
	proctest.WaitFor(t, 30*time.Second, func() bool {
		p, err := m.DB().Position(ctx, game)
		return err == nil && p == last
	}, "the upgraded store caught up to %s", last)

	newer, err := gamesim.Append(ctx, rdb, mint, game,
		gamesim.Event{Kind: event.KindChat, Fields: []gamesim.Field{{Name: "player", Value: "ada"}, {Name: "text", Value: "hi"}, {Name: "lang", Value: "en"}}},
		gamesim.Event{Kind: event.KindRoundStarted, Fields: []gamesim.Field{{Name: "round", Value: "1"}, {Name: "timer_s", Value: "90"}}})
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]string(nil), ids...), newer...)
	var lastErr error
	proctest.WaitFor(t, 30*time.Second, func() bool {
		lastErr = shownOnce(m.DB(), game, all)
		return lastErr == nil
	}, "every line once, the newer writer's too (%v)", lastErr)
	if n := deadCount(t, rdb, game); n != 0 {
		t.Errorf("%d dead letters, want none", n)
	}
	tl, err := m.DB().Timeline(ctx, game)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range tl[:len(ids)] {
		if l.Seq != int64(i+1) || l.EvtID != ids[i] {
			t.Errorf("line %d: seq %d %s after the upgrade, want seq %d %s", i, l.Seq, l.EvtID, i+1, ids[i])
		}
	}
	if id, err := m.DB().ID(ctx); err != nil || id != oldID {
		t.Errorf("store id %q (%v) after the upgrade, want %q", id, err, oldID)
	}

	// A browser that loaded the page from the old release resumes from its
	// cursor: the lines written since, no reset.
	after := len(ids)
	got2 := resumeLines(t, m.Addr(), game, after, oldID, ids[after-1], len(newer))
	if len(got2) != len(newer) || got2[0] != newer[0] || got2[1] != newer[1] {
		t.Errorf("resumed from the old release's cursor: %v, want %v", got2, newer)
	}
}

// resumeLines opens the game's event stream from a cursor (after, store,
// last) and returns the EVT ids of the first n line frames; a reset frame
// fails the test.
func resumeLines(t *testing.T, addr, game string, after int, store, last string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	u := fmt.Sprintf("http://%s/games/%s/events?after=%d&store=%s&last=%s", addr, game, after, store, last)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", u, resp.Status)
	}
	var ids []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for len(ids) < n && sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var f struct {
			T  string `json:"t"`
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(data), &f); err != nil {
			continue // a ping's data
		}
		switch f.T {
		case "reset":
			t.Fatalf("the cursor after=%d store=%s last=%s was reset", after, store, last)
		case "line":
			ids = append(ids, f.ID)
		}
	}
	return ids
}
