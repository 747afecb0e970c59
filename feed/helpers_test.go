package feed_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

const group = "feed"

// waitFor is wait.For: poll a condition with a deadline.
var waitFor = wait.For

// readBlocked reports whether a client of node is blocked in an
// XREADGROUP (CLIENT LIST's flags=b): the consumer's blocking read is
// under way there, so what a test does next happens under it.
func readBlocked(ctx context.Context, node redis.Cmdable) bool {
	list, err := node.ClientList(ctx).Result()
	if err != nil {
		return false
	}
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, "cmd=xreadgroup") && strings.Contains(line, "flags=b") {
			return true
		}
	}
	return false
}

// testLogger sends warnings and errors to the test log.
func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tbWriter struct{ tb testing.TB }

// logBuffer collects log output for assertions, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), substr)
}

// captureLogs sends cfg's warnings and errors to the test log and to the
// returned buffer, for assertions on what was logged.
func captureLogs(tb testing.TB, cfg *feed.Config) *logBuffer {
	logs := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs, tbWriter{tb}), &slog.HandlerOptions{Level: slog.LevelWarn}))
	return logs
}

// handledOnce checks that seen, a count of handler calls by EVT id, holds
// n entries, each handled once.
func handledOnce(tb testing.TB, seen map[string]int, n int) {
	tb.Helper()
	if len(seen) != n {
		tb.Errorf("%d entries handled, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			tb.Errorf("%s handled %d times, want once", id, k)
		}
	}
}

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// baseConfig is a Config with short timings for tests.
func baseConfig(tb testing.TB, rdb redis.UniversalClient, name string, streams ...string) feed.Config {
	return feed.Config{
		Client:       rdb,
		Group:        group,
		Consumer:     name,
		Streams:      feed.StaticStreams(streams...),
		StreamsEvery: 200 * time.Millisecond,
		MinIdle:      300 * time.Millisecond,
		ClaimEvery:   100 * time.Millisecond,
		Block:        100 * time.Millisecond,
		LeaseTTL:     time.Second,
		CensusEvery:  200 * time.Millisecond,
		Logger:       testLogger(tb),
	}
}

// mustOpen opens a consumer and closes it when the test ends.
func mustOpen(tb testing.TB, cfg feed.Config) *feed.Consumer {
	tb.Helper()
	c, err := feed.Open(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("open %s: %v", cfg.Consumer, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// mustStart starts a redis-server and returns a client of it.
func mustStart(tb testing.TB, opts ...redistest.Options) (*redistest.Server, *redis.Client) {
	tb.Helper()
	s := redistest.MustStart(tb, opts...)
	return s, s.Client(tb)
}

var minter = event.NewMinter(time.Now().UnixNano())

// add appends an entry with a fresh EVT id and the given extra fields
// (name, value pairs) and returns the EVT id.
func add(tb testing.TB, rdb redis.UniversalClient, stream string, kv ...string) string {
	tb.Helper()
	id := minter.Next(time.Now())
	vals := []any{"id", id, "kind", "chat", "at", time.Now().UTC().Format(time.RFC3339), "player", "ana", "text", "hi"}
	for _, s := range kv {
		vals = append(vals, s)
	}
	if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: stream, Values: vals}).Err(); err != nil {
		tb.Fatalf("xadd %s: %v", stream, err)
	}
	return id
}

// addRaw appends an entry with exactly the given fields and returns its
// stream position.
func addRaw(tb testing.TB, rdb redis.UniversalClient, stream string, vals ...any) string {
	tb.Helper()
	pos, err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: stream, Values: vals}).Result()
	if err != nil {
		tb.Fatalf("xadd %s: %v", stream, err)
	}
	return pos
}

// recorder is a handler that records what it handled.
type recorder struct {
	mu   sync.Mutex
	seen []feed.Message
}

func (r *recorder) add(m feed.Message) {
	r.mu.Lock()
	r.seen = append(r.seen, m)
	r.mu.Unlock()
}

func (r *recorder) handler(ctx context.Context, m feed.Message) error {
	r.add(m)
	return nil
}

func (r *recorder) all() []feed.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]feed.Message(nil), r.seen...)
}

func (r *recorder) count(id string) int {
	n := 0
	for _, m := range r.all() {
		if m.ID == id {
			n++
		}
	}
	return n
}

func (r *recorder) ids() map[string]int {
	out := map[string]int{}
	for _, m := range r.all() {
		out[m.ID]++
	}
	return out
}

// pendingWith creates the group at the stream's start and reads what the
// stream holds as consumer, leaving it pending there: a consumer's
// earlier life that read its entries and died with them.
func pendingWith(tb testing.TB, rdb redis.UniversalClient, stream, consumer string) {
	tb.Helper()
	ctx := context.Background()
	if err := rdb.XGroupCreate(ctx, stream, group, "0").Err(); err != nil {
		tb.Fatal(err)
	}
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: consumer, Streams: []string{stream, ">"}, Count: 100}).Err(); err != nil {
		tb.Fatal(err)
	}
}

// pending returns the group's pending count on stream.
func pending(tb testing.TB, rdb redis.UniversalClient, stream string) int64 {
	tb.Helper()
	p, err := rdb.XPending(context.Background(), stream, group).Result()
	if err != nil {
		tb.Fatalf("xpending %s: %v", stream, err)
	}
	return p.Count
}

// commandCalls returns the calls of each command from INFO commandstats.
func commandCalls(tb testing.TB, rdb redis.UniversalClient) map[string]int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatalf("info commandstats: %v", err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		var calls int64
		if _, err := fmt.Sscanf(rest, "calls=%d", &calls); err == nil {
			out[name] = calls
		}
	}
	return out
}

func stream(game string) string { return event.StreamKey(game) }

// deliveredScript reads the server's clock and an entry's idle time in one
// step: TIME, then the entry's line of XPENDING.
var deliveredScript = redis.NewScript(`
local t = redis.call('TIME')
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #p == 0 then return redis.error_reply('not pending') end
return {t[1], t[2], p[1][3]}
`)

// deliveredAt returns when the server last delivered m, by its own clock
// (its TIME less the entry's idle time, to the millisecond). Retry tests
// measure their gaps with it rather than with the handler's start, which
// also holds how long the delivery took to reach the handler: a slow
// reply on a loaded host made a retry look sooner than MinIdle.
func deliveredAt(ctx context.Context, rdb redis.UniversalClient, m feed.Message) (time.Time, error) {
	v, err := deliveredScript.Run(ctx, rdb, []string{m.Stream}, m.Group, m.Position).Slice()
	if err != nil {
		return time.Time{}, fmt.Errorf("delivered %s: %w", m.Position, err)
	}
	if len(v) != 3 {
		return time.Time{}, fmt.Errorf("delivered %s: reply %v", m.Position, v)
	}
	sec, err1 := strconv.ParseInt(fmt.Sprint(v[0]), 10, 64)
	usec, err2 := strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
	idle, ok := v[2].(int64)
	if err1 != nil || err2 != nil || !ok {
		return time.Time{}, fmt.Errorf("delivered %s: reply %v", m.Position, v)
	}
	return time.Unix(sec, usec*1000).Add(-time.Duration(idle) * time.Millisecond), nil
}

// noFailover is the cluster-node-timeout of the tests that kill a master
// with no replica: longer than any test, so the cluster never marks the
// dead master failed, which would make every node answer CLUSTERDOWN
// (full coverage is required) and fail a slow test's writes to the live
// masters. One minute could, in a test slowed by a loaded machine.
const noFailover = 10 * time.Minute

func redisZ(game string) redis.Z {
	return redis.Z{Score: float64(time.Now().UnixMilli()), Member: game}
}

// spareMaster returns a master of rc that serves neither the registry nor
// consumer's lease: those have a master of their own to fail over, at a
// cost to every game.
func spareMaster(t *testing.T, rc *redistest.Cluster, consumer string) *redistest.Server {
	t.Helper()
	busy := map[string]bool{
		rc.MasterOfSlot(t, rc.Slot(t, event.RegistryKey)).Addr:               true,
		rc.MasterOfSlot(t, rc.Slot(t, event.LeaseKey(group, consumer))).Addr: true,
	}
	for _, m := range rc.Masters(t) {
		if !busy[m.Addr] {
			return m
		}
	}
	t.Fatal("no master free of the registry and the lease")
	return nil
}

// mustReadSpareMastersGame starts a cluster of three masters that do not
// fail over, and opens consumer c1 on two games: one on a master that
// serves neither the registry nor c1's lease (returned as spare, the one
// a test then kills or hangs), the other on another master. It returns
// once c1 has read an entry of each, with the two games' streams.
func mustReadSpareMastersGame(t *testing.T, prefix string) (rdb *redis.ClusterClient, spare *redistest.Server, live, onSpare string) {
	t.Helper()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover}})
	rdb = rc.Client(t)
	spare = spareMaster(t, rc, "c1")
	live, onSpare = stream(gameOn(t, rc, "live", spare, false)), stream(gameOn(t, rc, prefix, spare, true))
	rec := &recorder{}
	cfg := baseConfig(t, rdb, "c1", live, onSpare)
	cfg.Handler = rec.handler
	mustOpen(t, cfg)
	ids := []string{add(t, rdb, live), add(t, rdb, onSpare)}
	waitFor(t, 10*time.Second, "both games read", func() bool { return rec.count(ids[0]) == 1 && rec.count(ids[1]) == 1 })
	return rdb, spare, live, onSpare
}

// gameOn returns the first game prefix-N whose stream master serves, or
// (on false) does not.
func gameOn(t *testing.T, rc *redistest.Cluster, prefix string, master *redistest.Server, on bool) string {
	t.Helper()
	for i := 0; ; i++ {
		g := fmt.Sprintf("%s-%d", prefix, i)
		if (rc.MasterOfSlot(t, rc.Slot(t, stream(g))).Addr == master.Addr) == on {
			return g
		}
	}
}

// registryCluster starts a 3-master cluster without failover, its client,
// and the master of the registry, which is not the master of consumer c1's
// lease (else the consumer could not read at all with it down).
func registryCluster(t *testing.T) (*redistest.Cluster, *redis.ClusterClient, *redistest.Server) {
	t.Helper()
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1,
		Node: redistest.Options{NodeTimeout: noFailover}})
	registry := rc.MasterOfSlot(t, rc.Slot(t, event.RegistryKey))
	if registry.Addr == rc.MasterOfSlot(t, rc.Slot(t, event.LeaseKey(group, "c1"))).Addr {
		t.Fatal("the registry and the lease share a master: the consumer could not read at all")
	}
	return rc, rc.Client(t), registry
}

func handled1(rec *recorder, id string) func() bool { return func() bool { return rec.count(id) == 1 } }

// userWithout makes the ACL user "r" on srv, allowed every command but
// denied (each "-cmd" or "-cmd|sub"), and returns a client logged in as it.
func userWithout(tb testing.TB, srv *redistest.Server, admin *redis.Client, denied ...string) *redis.Client {
	tb.Helper()
	args := []any{"ACL", "SETUSER", "r", "on", ">pw", "~*", "&*", "+@all"}
	for _, d := range denied {
		args = append(args, d)
	}
	if err := admin.Do(context.Background(), args...).Err(); err != nil {
		tb.Fatal(err)
	}
	user := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "r", Password: "pw"})
	tb.Cleanup(func() { user.Close() })
	return user
}
