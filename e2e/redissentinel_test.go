package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// TestRedisSentinel: a renderer process reads a Redis made highly
// available by Sentinel (a master, two replicas, three Sentinels) through
// the Sentinel URL. gamesim writes three games through the same URL; then
// the test's own writer writes a live game through a failover client
// from redisconn.Open, each write followed by WAIT 1 in its pipeline so
// that what it counts as written is on the replica. Mid-run the replicas
// are stopped until the renderer has stored an event only the master
// has; the master is SIGKILLed, the replicas go on, and the
// Sentinels promote one: the writer goes on
// through its client (a write that failed or was not confirmed is written
// again under the same EVT id), and the renderer goes on without a
// restart, storing lines again. In the end every event written is in the
// store exactly once (the event stored from the dead master and written
// again to the new one is taken as a duplicate, a no-op; nothing is
// dead-lettered as a conflict), nothing is pending or unread, the renderer is the
// same process and ready, and feedctl status over the Sentinel URL shows
// the games.
func TestRedisSentinel(t *testing.T) {
	ctx := context.Background()
	// Two replicas: after the promotion one is left, for the writer's
	// WAIT 1.
	st := redistest.MustStartSentinel(t, redistest.SentinelOptions{Replicas: 2})
	c := &cluster{tb: t, url: st.URL(), dbPath: filepath.Join(t.TempDir(), "feed.db"), group: "feed",
		renderers: map[string]*renderer{}}
	r1 := c.start("r1", "-sweep-every", "2s")
	pid := r1.Pid()

	sim := proctest.Start(t, "gamesim", "gamesim", []string{"-redis", st.URL(),
		"-games", "3", "-events", "40", "-rate", "200", "-seed", "5", "-prefix", "sn"})
	simCtx, cancelSim := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelSim()
	if err := sim.Wait(simCtx); err != nil {
		t.Fatalf("gamesim over the Sentinel URL: %v\n%s", err, sim.Output())
	}
	// gamesim writes without WAIT: its writes are made to survive the
	// kill here, so that the test proves the feed's part, not Redis's.
	st.WaitReplicated(t)

	rdb, err := redisconn.Open(st.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	w := &waitWriter{rdb: rdb, game: "sn-live", minter: event.NewMinter(time.Now().UnixNano())}
	wctx, stopWriter := context.WithCancel(ctx)
	defer stopWriter()
	werr := make(chan error, 1)
	go func() { werr <- w.run(wctx) }()

	liveLines := func() int { return len(storeIDsOf(t, c.dbPath, w.game)) }
	progress := func(what string, more int) {
		t.Helper()
		n0 := liveLines()
		wait.Until(t, 60*time.Second, func() bool { return liveLines() >= n0+more || r1.Exited() }, func() string {
			return fmt.Sprintf("%d more lines of %s stored %s (have %d, had %d; %d written)", more, w.game, what, liveLines(), n0, w.count())
		})
		if r1.Exited() {
			t.Fatalf("the renderer exited %s:\n%s", what, r1.Output())
		}
	}
	progress("before the kill", 30)
	// The replicas stop (SIGSTOP) until the master is dead: the writer's
	// next event is then on the master alone, unconfirmed by WAIT, and
	// written again there, until the renderer has stored it from there
	// (its delivery and XACK die with the master). The promoted replica
	// lacks the event; the writer writes it to it again, and the renderer
	// must take that copy as the no-op it is.
	killed, replicas := st.Master(t), st.Replicas(t)
	for _, r := range replicas {
		r.Pause(t)
	}
	wait.For(t, 30*time.Second, "the renderer to store an event no replica has", func() bool {
		return len(storeIDsOf(t, c.dbPath, w.game)) > w.count()
	})
	killed.Kill(t)
	for _, r := range replicas {
		r.Resume(t)
	}
	promoted := st.Master(t)
	t.Logf("killed master %s after %d writes; Sentinels promoted %s", killed.Addr, w.count(), promoted.Addr)
	progress("after the kill", 30)
	stopWriter()
	if err := <-werr; err != nil {
		t.Fatalf("writer: %v", err)
	}

	if r1.Exited() || r1.Pid() != pid {
		t.Fatalf("renderer pid %d (exited %v), want the same process %d throughout", r1.Pid(), r1.Exited(), pid)
	}
	// What the renderer reads now is on the promoted replica.
	check := st.Client(t)
	names := []string{gamesim.GameName("sn", 1), gamesim.GameName("sn", 2), gamesim.GameName("sn", 3)}
	checkAllHandled(t, check, c.dbPath, c.group, names, 2*time.Minute)
	written := w.written()
	var why string
	wait.Until(t, 2*time.Minute, func() bool {
		why = handled(ctx, t, check, c.dbPath, c.group, w.game, written, nil)
		return why == ""
	}, func() string { return w.game + ": " + why })
	// handled compared the store with the writes, each once: the stream
	// holds the same events (one may be there twice, written again after
	// a write whose answer the kill took).
	good, bad := classify(t, check, w.game)
	slices.Sort(good)
	if got := slices.Compact(good); !slices.Equal(got, written) || len(bad) != 0 {
		t.Fatalf("the promoted master's stream of %s holds %d events (%d malformed), want the %d written", w.game, len(got), len(bad), len(written))
	}
	// A redelivery is a no-op only if it carries the same payload: one
	// that did not would be a conflict, dead-lettered.
	if n, err := check.XLen(ctx, event.DeadKey(w.game)).Result(); err != nil || n != 0 {
		t.Fatalf("%s: %d dead letters (%v), want none", w.game, n, err)
	}
	m := scrape(t, r1)
	if n := m["codemojex_store_conflicts_total"]; n != 0 {
		t.Fatalf("the store met %v conflicts, want none", n)
	}
	dup := m[`codemojex_store_upsert_events_total{outcome="duplicate"}`]
	if dup < 1 {
		t.Fatalf("the store took %v events again, want at least the one stored from the dead master and written again", dup)
	}
	t.Logf("%s: %d events written through the failover, each stored once; the store took %v again as duplicates, the renderer claimed %v",
		w.game, len(written), dup, m["codemojex_feed_claimed_total"])
	wait.For(t, 20*time.Second, "the renderer's /readyz to answer 200", func() bool {
		code, _ := readyz(r1)
		return code == http.StatusOK
	})

	out, ok := feedctl(t, st.URL(), "status")
	if !ok {
		t.Fatalf("feedctl status over the Sentinel URL failed:\n%s", out)
	}
	for _, g := range append(names, w.game) {
		if !strings.Contains(out, g) {
			t.Errorf("feedctl status over the Sentinel URL does not show %s:\n%s", g, out)
		}
	}
}

// waitWriter writes chat events of one game through rdb, each in a
// pipeline that ends with WAIT 1 (on the connection that wrote it, as
// WAIT must be), and counts an event written only once WAIT says a
// replica has it. A write that fails, or that no replica confirmed, is
// written again under the same EVT id until one does.
type waitWriter struct {
	rdb    redis.UniversalClient
	game   string
	minter *event.Minter

	mu  sync.Mutex
	ids []string
}

// writeEvery paces the writer: about 50 events a second.
const writeEvery = 20 * time.Millisecond

// run writes until ctx ends, and fails when an event cannot be written
// within a minute.
func (w *waitWriter) run(ctx context.Context) error {
	tick := time.NewTicker(writeEvery)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := w.write(ctx, n); err != nil {
			return err
		}
	}
}

func (w *waitWriter) write(ctx context.Context, n int) error {
	id := w.minter.Next(time.Now())
	e := gamesim.Event{Kind: event.KindChat, Fields: []gamesim.Field{{Name: "player", Value: "ada"}, {Name: "text", Value: fmt.Sprint("line ", n)}}}
	at := time.Now() // the same entry at every try: the store refuses an EVT id with another payload
	giveUp := at.Add(time.Minute)
	var last error
	for time.Now().Before(giveUp) {
		call, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		pipe := w.rdb.Pipeline()
		pipe.XAdd(call, &redis.XAddArgs{Stream: event.StreamKey(w.game), Values: e.Entry(id, at)})
		pipe.ZAddGT(call, event.RegistryKey, redis.Z{Score: float64(at.UnixMilli()), Member: w.game})
		acked := pipe.Do(call, "WAIT", 1, 1000)
		_, err := pipe.Exec(call)
		cancel()
		if n, _ := acked.Int64(); err == nil && n >= 1 {
			w.mu.Lock()
			w.ids = append(w.ids, id)
			w.mu.Unlock()
			return nil
		}
		last = fmt.Errorf("%v (WAIT: %d replicas)", err, n)
		// The master is dying or being replaced: go-redis's dial retries
		// pace this loop; the
		// pause only keeps it off a busy loop. A writer stopped meanwhile
		// finishes the write first, so that every id attempted counts.
		<-time.After(50 * time.Millisecond)
	}
	return fmt.Errorf("event %s of %s not written within a minute: %v", id, w.game, last)
}

func (w *waitWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ids)
}

// written returns the EVT ids written, sorted.
func (w *waitWriter) written() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Clone(w.ids)
	slices.Sort(out)
	return out
}

// TestRedisSentinelFailures: what an operator meets when the Sentinel
// side is wrong or down. A master_name the Sentinels do not monitor (a
// typo) stops the renderer at start, and feedctl, with an error that
// names it and the names they do monitor, within the probe's 2 s; so does
// a master that refuses the URL's master user, with an error that says
// it is the master's refusal and shows no password. With
// no Sentinel reachable the renderer starts as with a Redis that is down:
// it serves, /readyz says 503, its log says what it cannot reach, and
// once the Sentinels are back it reads and stores, the same process.
func TestRedisSentinelFailures(t *testing.T) {
	st := redistest.MustStartSentinel(t)

	t.Run("unknown master", func(t *testing.T) {
		url := strings.Replace(st.URL(), "master_name="+st.Name, "master_name=fedmaster", 1)
		rendererStartFails(t, url, `no Sentinel knows a master named \"fedmaster\"`, st.Name)
		out2, ok := feedctl(t, url, "status")
		if ok || !strings.Contains(out2, `no Sentinel knows a master named "fedmaster"`) {
			t.Fatalf("feedctl status on an unknown master: ok %v:\n%s", ok, out2)
		}
	})

	t.Run("master refuses the URL's user", func(t *testing.T) {
		url := st.URL() + "&username=nobody&password=s3cret-master"
		want := `refuses the URL's master user: WRONGPASS`
		if out := rendererStartFails(t, url, want); strings.Contains(out, "s3cret") {
			t.Fatalf("the renderer shows the password:\n%s", out)
		}
		out2, ok := feedctl(t, url, "status")
		if ok || !strings.Contains(out2, want) || strings.Contains(out2, "s3cret") {
			t.Fatalf("feedctl status with a wrong master password: ok %v:\n%s", ok, out2)
		}
	})

	t.Run("no Sentinel reachable", func(t *testing.T) {
		for _, sn := range st.Sentinels {
			sn.Stop() // the ports stay reserved for them
		}
		c := &cluster{tb: t, url: st.URL(), dbPath: filepath.Join(t.TempDir(), "feed.db"), group: "feed",
			renderers: map[string]*renderer{}}
		r1 := c.start("r1")
		pid := r1.Pid()
		var body string
		wait.Until(t, 30*time.Second, func() bool {
			var code int
			code, body = readyz(r1)
			return code == http.StatusServiceUnavailable && strings.Contains(body, "no Sentinel of")
		}, func() string { return "/readyz to answer 503 saying that no Sentinel answered: " + body })
		wait.For(t, 30*time.Second, "the renderer to log that it cannot reach the Sentinels", func() bool {
			return strings.Contains(r1.Output(), `level=WARN`) && strings.Contains(r1.Output(), `no Sentinel of `+strings.Join(st.SentinelAddrs(), ", ")+` answered for master \"`+st.Name+`\"`)
		})

		for _, sn := range st.Sentinels {
			sn.Start(t)
		}
		rdb := st.Client(t)
		w := &writer{tb: t, rdb: rdb, game: "sn-back", minter: event.NewMinter(time.Now().UnixNano())}
		ids := []string{w.chat("ada", "back"), w.chat("bob", "again")}
		slices.Sort(ids)
		wait.For(t, 60*time.Second, "the lines written once the Sentinels are back to be stored", func() bool {
			return slices.Equal(c.storeIDs(w.game), ids)
		})
		wait.For(t, 30*time.Second, "/readyz to answer 200", func() bool {
			code, _ := readyz(r1)
			return code == http.StatusOK
		})
		if r1.Exited() || r1.Pid() != pid {
			t.Fatalf("renderer pid %d (exited %v), want the same process %d throughout", r1.Pid(), r1.Exited(), pid)
		}
	})
}

// rendererStartFails runs the renderer on url and checks that it stops at
// start, exit status 1 with ERROR "start failed", saying each of want; it
// returns the renderer's output.
func rendererStartFails(t *testing.T, url string, want ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(proctest.Binaries(t), "renderer"), "-redis", url,
		"-db", filepath.Join(t.TempDir(), "feed.db"), "-http", "127.0.0.1:0")
	b, err := cmd.CombinedOutput()
	out := string(b)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, `level=ERROR msg="start failed"`) {
		t.Fatalf("renderer: %v, want exit status 1 and ERROR \"start failed\":\n%s", err, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("renderer's refusal does not say %s:\n%s", w, out)
		}
	}
	return out
}
