package e2e_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

func TestMain(m *testing.M) {
	code := m.Run()
	proctest.Cleanup()
	os.Exit(code)
}

// cluster is a Redis, a shared SQLite file and renderer processes.
type cluster struct {
	tb     testing.TB
	redis  *redistest.Server
	rdb    *redis.Client
	dbPath string
	group  string
	url    string // -redis of the renderers; redis.URL() when empty

	mu        sync.Mutex
	renderers map[string]*renderer
}

// renderer is one renderer process and its address.
type renderer struct {
	*proctest.Proc
	name string
	addr string // 127.0.0.1:port
}

func (r *renderer) url(path string) string { return "http://" + r.addr + path }

func newCluster(tb testing.TB, opts ...redistest.Options) *cluster {
	tb.Helper()
	s := redistest.MustStart(tb, opts...)
	return &cluster{
		tb:        tb,
		redis:     s,
		rdb:       s.Client(tb),
		dbPath:    filepath.Join(tb.TempDir(), "feed.db"),
		group:     "feed",
		renderers: map[string]*renderer{},
	}
}

// start starts a renderer named name with fast test timings and waits until
// it serves. Extra flags override the defaults.
func (c *cluster) start(name string, extra ...string) *renderer {
	c.tb.Helper()
	flags := func(addr string) []string {
		args := []string{
			"-redis", c.redisURL(),
			"-db", c.dbPath,
			"-http", addr,
			"-group", c.group,
			"-consumer", name,
			"-min-idle", "1s",
			"-claim-every", "200ms",
			"-games-refresh", "200ms",
			"-log-level", "debug",
		}
		return append(args, extra...)
	}
	// No load balancer probes them: a SIGTERMed renderer need not wait for
	// one to drain (the environment, so a test's -shutdown-delay wins).
	p, addr := proctest.StartHTTP(c.tb, name, "renderer", servingPath, 200, 20*time.Second, flags, "FEED_SHUTDOWN_DELAY=0")
	r := &renderer{Proc: p, name: name, addr: addr}
	c.mu.Lock()
	c.renderers[name] = r
	c.mu.Unlock()
	return r
}

func (c *cluster) redisURL() string {
	if c.url != "" {
		return c.url
	}
	return c.redis.URL()
}

// host returns another host on the same Redis: its own consumer group and
// its own store, as docs/operations.md deploys them.
func (c *cluster) host(group string) *cluster {
	return &cluster{
		tb:        c.tb,
		redis:     c.redis,
		rdb:       c.rdb,
		url:       c.url,
		dbPath:    filepath.Join(c.tb.TempDir(), group+".db"),
		group:     group,
		renderers: map[string]*renderer{},
	}
}

// restart starts r again with the same name, address and flags.
func (c *cluster) restart(r *renderer) {
	c.tb.Helper()
	r.Restart(c.tb)
	proctest.WaitHTTP(c.tb, r.url(servingPath), 200, 20*time.Second)
}

// servingPath answers 200 once a renderer serves: not /healthz, which
// answers from the moment the port is bound, while the renderer still
// opens its store and takes its consumer name (web.Starting), nor /readyz,
// which a test's fault (Redis down) keeps at 503. A page asked before the
// renderer serves waits for it.
const servingPath = "/"

// writer appends events of one game to its stream through gamesim.
type writer struct {
	tb     testing.TB
	rdb    *redis.Client
	game   string
	minter *event.Minter
	ids    []string // every id written, in write order
}

func (c *cluster) writer(game string) *writer {
	return &writer{tb: c.tb, rdb: c.rdb, game: game, minter: event.NewMinter(time.Now().UnixNano())}
}

// mint returns a new EVT id without writing it (to write it later, out of
// order).
func (w *writer) mint() string { return w.minter.Next(time.Now()) }

// add writes an entry with id and the kind's fields (gamesim's writer).
func (w *writer) add(id, kind string, kv ...string) {
	w.tb.Helper()
	e := gamesim.Event{Kind: kind}
	for i := 0; i+1 < len(kv); i += 2 {
		e.Fields = append(e.Fields, gamesim.Field{Name: kv[i], Value: kv[i+1]})
	}
	item := gamesim.Item{Game: w.game, ID: id, Event: e}
	if err := gamesim.AppendItems(context.Background(), w.rdb, time.Now(), item); err != nil {
		w.tb.Fatal(err)
	}
	w.ids = append(w.ids, id)
}

// chat writes a chat line and returns its id.
func (w *writer) chat(player, text string) string {
	w.tb.Helper()
	id := w.mint()
	w.add(id, "chat", "player", player, "text", text)
	return id
}

// storeIDs returns the game's stored EVT ids in EVT-id order, read straight
// from the SQLite file.
func (c *cluster) storeIDs(game string) []string {
	c.tb.Helper()
	return storeIDsOf(c.tb, c.dbPath, game)
}

// storeIDsOf is storeIDs of the store at path.
func storeIDsOf(tb testing.TB, path, game string) []string {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT evt_id FROM events WHERE game = ? ORDER BY evt_id`, game)
	if err != nil {
		return nil // not created yet
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// waitStored waits until the store holds exactly want (as a set) for game.
func (c *cluster) waitStored(game string, want []string, timeout time.Duration) {
	c.tb.Helper()
	sorted := append([]string(nil), want...)
	sort.Strings(sorted)
	sorted = dedupe(sorted)
	var got []string
	wait.Until(c.tb, timeout, func() bool {
		got = c.storeIDs(game)
		return equal(got, sorted)
	}, func() string { return fmt.Sprintf("store of %s to hold %d ids (has %d)", game, len(sorted), len(got)) })
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// pageSeq extracts the seq embedded in a game page.
func pageSeq(tb testing.TB, html string) int64 {
	tb.Helper()
	i := strings.Index(html, `data-seq="`)
	if i < 0 {
		tb.Fatalf("page has no data-seq")
	}
	rest := html[i+len(`data-seq="`):]
	n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, '"')], 10, 64)
	if err != nil {
		tb.Fatalf("page data-seq: %v", err)
	}
	return n
}

func describe(ids []string) string {
	if len(ids) > 6 {
		return fmt.Sprintf("%v … (%d)", ids[:6], len(ids))
	}
	return fmt.Sprint(ids)
}

func sortStrings(s []string) { sort.Strings(s) }

type redisXReadGroupArgs = redis.XReadGroupArgs

type redisXClaimArgs = redis.XClaimArgs
