package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/proc"
	"github.com/codemojex/feed/internal/testkit/proctest"
)

// nodeState is where a supervised renderer is in its kill/restart cycle.
type nodeState int

const (
	nodeUp       nodeState = iota // serving
	nodeDown                      // dead, to be started at nextTry
	nodeStarting                  // started, not serving yet
	nodeTerming                   // SIGTERMed, shutting down gracefully
)

// chaosNode is one renderer under the fault schedule.
type chaosNode struct {
	r         *renderer
	state     nodeState
	downAt    time.Time // when it was killed or found dead
	nextTry   time.Time
	tries     int  // start attempts since downAt
	afterTerm bool // it went down by SIGTERM: its lease must be free at once
}

type termResult struct {
	n   *chaosNode
	err error
}

// chaosFaults runs the fault schedule and supervises the renderers, all
// from the test's goroutine; reclaim trackers run on their own.
type chaosFaults struct {
	t     *testing.T
	c     *cluster
	plan  chaosPlan
	nodes []*chaosNode
	sim   *proctest.Proc
	games []string
	rng   *rand.Rand

	storeLost *atomic.Bool // set as the store file is deleted

	kills, terms, redisRestarts, outages, refused, failedStarts int
	diskFulls, storeLosses, lateProbes                          int
	errs                                                        errorList

	disk diskSpell
	loss storeLoss

	wg        sync.WaitGroup // reclaim trackers
	mu        sync.Mutex
	reclaims  []time.Duration
	reclaimed []string // name@kill time:ms/entries, for the log
}

// diskSpell is the full-disk fault: the store's tmpfs filled at once,
// freed after plan.diskFull.
type diskSpell struct {
	done    bool      // it happened (once per run)
	filler  string    // the file that fills the disk, while it is full
	freeAt  time.Time // when to free it; zero when not full
	sawFull bool      // a renderer's /readyz said so meanwhile
}

// storeLoss is the store-loss fault: the file deleted under the running
// renderers, each seen not ready, then all restarted on a new file.
type storeLoss struct {
	done     bool                // it happened (once per run)
	deadline time.Time           // for every renderer to turn not ready; zero when not waiting
	seen     map[*chaosNode]bool // renderers whose /readyz said the file is gone
}

// restartBackoff is the pause before start attempt n (1-based) of a dead
// renderer: the first is at once, so a held name is seen refused.
func restartBackoff(n int) time.Duration {
	return min(time.Duration(n)*250*time.Millisecond, time.Second)
}

// run paces the faults with a ticker until the writer is done and every
// fault happened, then waits until every renderer serves again.
func (f *chaosFaults) run() {
	p := f.plan
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	cycle := start
	nextKill := start.Add(p.killEvery)
	var restarted, termed, paused bool // in this cycle
	var resumeAt time.Time
	terms := make(chan termResult, 1)
	for ; ; <-tick.C {
		now := time.Now()
		writing := !f.sim.Exited()
		select {
		case res := <-terms:
			if res.err != nil {
				f.errs.add("%s: graceful shutdown on SIGTERM: %v", res.n.r.name, res.err)
			}
			res.n.state, res.n.downAt, res.n.nextTry, res.n.tries, res.n.afterTerm = nodeDown, now, now, 0, true
		default:
		}
		f.supervise(now)

		if !resumeAt.IsZero() && !now.Before(resumeAt) {
			f.c.redis.Resume(f.t)
			resumeAt = time.Time{}
		}
		f.tendDisk(now, start)
		f.tendLoss(now, start)
		// No fault underway: Redis answers, the disk has space, the store
		// is not being replaced.
		quiet := func() bool { return resumeAt.IsZero() && f.disk.freeAt.IsZero() && f.loss.deadline.IsZero() }
		if p.cycle > 0 && writing && now.Sub(cycle) >= p.cycle && restarted && termed && paused {
			cycle, restarted, termed, paused = now, false, false, false
		}
		at := now.Sub(cycle)
		switch {
		// The faults are kept apart: a graceful shutdown is not run into a
		// Redis outage, nor an outage into a Redis restart.
		case !restarted && at >= p.redisRestartAt && quiet() && !f.terming():
			f.t.Logf("chaos: %v: Redis SIGKILL and restart", now.Sub(start).Round(time.Millisecond))
			f.c.redis.Restart(f.t)
			f.redisRestarts++
			restarted = true
		case !termed && at >= p.termAt && quiet():
			if n := f.victim(); n != nil {
				f.t.Logf("chaos: %v: SIGTERM %s", now.Sub(start).Round(time.Millisecond), n.r.name)
				n.state = nodeTerming
				f.terms++
				termed = true
				go func() { terms <- termResult{n, n.r.Term(20 * time.Second)} }()
			}
		case !paused && at >= p.outageAt && termed && quiet() && !f.terming():
			f.t.Logf("chaos: %v: Redis SIGSTOP for %v", now.Sub(start).Round(time.Millisecond), p.outage)
			f.c.redis.Pause(f.t)
			resumeAt = now.Add(p.outage)
			f.outages++
			paused = true
		case p.diskFullAt > 0 && !f.disk.done && at >= p.diskFullAt && quiet() && !f.terming():
			f.fillDisk(now, start)
		case p.storeLossAt > 0 && !f.loss.done && at >= p.storeLossAt && quiet() && !f.terming() && f.allUp():
			f.loseStore(now, start)
		}
		if !now.Before(nextKill) && (writing || f.kills < p.minKills) && f.loss.deadline.IsZero() {
			nextKill = now.Add(p.killEvery)
			if n := f.victim(); n != nil {
				// What it holds just before it dies: the entries to reclaim.
				var held map[string][]string // nil: the tracker reads them after the kill
				if resumeAt.IsZero() {
					if h, err := f.pendingOf(n.r.name, nil); err == nil {
						held = h
					}
				}
				now = time.Now()
				n.r.Kill()
				// A kill counts when the SIGKILL ended it: a renderer that had
				// exited by itself just before is a failure, not a kill.
				if out := sinceLastStart(n.r.Output()); !strings.Contains(out, "=== "+n.r.name+" after killed: signal: killed") {
					f.errs.add("%s: SIGKILL did not end a running renderer: %s", n.r.name, tailString(out, 1500))
				} else {
					f.kills++
				}
				f.t.Logf("chaos: %v: SIGKILL %s", now.Sub(start).Round(time.Millisecond), n.r.name)
				n.state, n.downAt, n.nextTry, n.tries, n.afterTerm = nodeDown, now, now, 0, false
				f.wg.Add(1)
				go f.trackReclaim(n.r.name, now, held)
			}
		}
		if !writing && f.kills >= p.minKills && restarted && termed && paused && quiet() && f.allUp() &&
			(p.diskFullAt == 0 || f.disk.done) && (p.storeLossAt == 0 || f.loss.done) {
			return
		}
		if time.Since(start) > p.settle+time.Duration(float64(p.games*p.events)/p.rate*float64(time.Second)) {
			f.t.Fatalf("chaos: fault schedule did not end (writer done: %v, kills %d, renderers up: %v)", !writing, f.kills, f.allUp())
		}
	}
}

// victim picks a random serving renderer, never the last one serving, so
// that a peer is there to reclaim its entries.
func (f *chaosFaults) victim() *chaosNode {
	var up []*chaosNode
	for _, n := range f.nodes {
		if n.state == nodeUp {
			up = append(up, n)
		}
	}
	if len(up) < 2 {
		return nil
	}
	return up[f.rng.IntN(len(up))]
}

// terming reports whether a SIGTERMed renderer is not serving again yet.
func (f *chaosFaults) terming() bool {
	for _, n := range f.nodes {
		if n.state == nodeTerming || (n.afterTerm && n.state != nodeUp) {
			return true
		}
	}
	return false
}

func (f *chaosFaults) allUp() bool {
	for _, n := range f.nodes {
		if n.state != nodeUp {
			return false
		}
	}
	return true
}

var healthClient = &http.Client{Timeout: 300 * time.Millisecond}

// patientClient is healthClient with time to spare: whether a renderer
// answers at all, when the supervisor's probes missed it.
var patientClient = &http.Client{Timeout: 10 * time.Second}

// supervise moves each renderer along: a dead one is started again with
// its name, a refused start (name still held, Redis away) is retried with
// backoff, and one that exits by itself is a failure.
func (f *chaosFaults) supervise(now time.Time) {
	for _, n := range f.nodes {
		switch n.state {
		case nodeUp:
			if n.r.Exited() {
				f.errs.add("%s exited by itself: %s", n.r.name, lastStart(n.r.Output()))
				n.state, n.downAt, n.nextTry, n.tries, n.afterTerm = nodeDown, now, now, 0, false
			}
		case nodeDown:
			if !now.Before(n.nextTry) {
				n.tries++
				n.r.Restart(f.t)
				n.state = nodeStarting
			}
		case nodeStarting:
			if n.r.Exited() {
				out := lastStart(n.r.Output())
				if strings.Contains(out, feed.ErrConsumerTaken.Error()) {
					f.refused++
					if n.afterTerm {
						f.errs.add("%s: restart after a graceful exit refused, the lease was not released: %s", n.r.name, out)
					}
				} else {
					f.failedStarts++
				}
				n.state, n.nextTry = nodeDown, now.Add(restartBackoff(n.tries))
				break
			}
			// Up once it serves, by its own log: /healthz answers from the
			// moment the port is bound, while the start may still wait for
			// the name (docs/operations.md), and a start refused at the end
			// of that wait (a Redis SIGSTOP within it) was taken for a
			// renderer up, then exited by itself (a CI run, 7 Dec 2026).
			if _, ok := servingSince(n.r.Output()); ok {
				n.state = nodeUp
				break
			}
			if now.Sub(n.downAt) > 30*time.Second {
				// This process's probe can miss a renderer that serves: with
				// hundreds of chaos clients in a race build on two cores, a
				// 1 ms timer here has fired 600 ms late while curl had its
				// answer in half a millisecond. The renderer's own log says
				// when it began serving; an answer with time to spare says
				// it still does.
				p := probe(n.r)
				if at, ok := servingSince(n.r.Output()); ok && at.Sub(n.downAt) <= 30*time.Second && p.code == http.StatusOK {
					f.lateProbes++
					f.t.Logf("chaos: %s serving since %v after it went down; this process's probes were late (%s)", n.r.name, at.Sub(n.downAt).Round(time.Millisecond), whyNotServing(n.r, p))
					n.state = nodeUp
					break
				}
				f.t.Fatalf("chaos: %s not serving again %v after it went down (%d start attempts); %s", n.r.name, now.Sub(n.downAt), n.tries, whyNotServing(n.r, p))
			}
		}
	}
}

// servingSince returns when a renderer's last start logged "web: serving".
func servingSince(out string) (time.Time, bool) {
	out = sinceLastStart(out)
	i := strings.Index(out, `msg="web: serving"`)
	if i < 0 {
		return time.Time{}, false
	}
	line := out[strings.LastIndexByte(out[:i], '\n')+1:]
	v, ok := strings.CutPrefix(line, "time=")
	if !ok {
		return time.Time{}, false
	}
	v, _, _ = strings.Cut(v, " ")
	at, err := time.Parse(time.RFC3339Nano, v)
	return at, err == nil
}

// probeResult is what one patient /healthz probe got, and how long it took.
type probeResult struct {
	code int // 0 when it failed
	took time.Duration
	err  error
}

// probe asks a renderer's /healthz with patientClient.
func probe(r *renderer) probeResult {
	t0 := time.Now()
	resp, err := patientClient.Get(r.url("/healthz"))
	if err != nil {
		return probeResult{took: time.Since(t0), err: err}
	}
	resp.Body.Close()
	return probeResult{code: resp.StatusCode, took: time.Since(t0)}
}

func (p probeResult) String() string {
	if p.err != nil {
		return fmt.Sprintf("a 10 s probe failed after %v: %v", p.took.Round(time.Millisecond), p.err)
	}
	return fmt.Sprintf("a 10 s probe answered %d after %v", p.code, p.took.Round(time.Millisecond))
}

// whyNotServing says what a renderer that missed its liveness bound was
// doing, so that the failure explains itself: how long a probe with time
// to spare took (p), the host's load, how late a 1 ms timer of this process
// fires (a starved test process misses probes too), and the renderer's
// goroutines, written to -chaos.logs when it is set.
func whyNotServing(r *renderer, p probeResult) string {
	parts := []string{p.String()}
	// The same probe from a process of its own: whether the renderer or
	// this, the test's busy process, is slow to answer.
	if out, err := exec.Command("curl", "-s", "-o", "/dev/null", "-m", "10", "-w", "%{http_code} after %{time_total}s (connected after %{time_connect}s)", r.url("/healthz")).Output(); err == nil {
		parts = append(parts, "curl's probe answered "+string(out))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		parts = append(parts, "load "+strings.TrimSpace(string(b)))
	}
	if c0, err := procTicks(r.Pid()); err == nil {
		time.Sleep(time.Second) // the window the renderer's CPU is measured over
		if c1, err := procTicks(r.Pid()); err == nil {
			parts = append(parts, fmt.Sprintf("the renderer used %.2f cores over the next second", float64(c1-c0)/clkTck))
		}
	}
	t0 := time.Now()
	time.Sleep(time.Millisecond) // measured: this process's timer latency
	parts = append(parts, fmt.Sprintf("a 1 ms timer of the test process fired after %v", time.Since(t0).Round(100*time.Microsecond)))
	if resp, err := patientClient.Get(r.url("/debug/pprof/goroutine?debug=1")); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		first, _, _ := strings.Cut(string(b), "\n")
		parts = append(parts, "renderer "+first)
		if *chaosLogs != "" && os.MkdirAll(*chaosLogs, 0o755) == nil {
			_ = os.WriteFile(filepath.Join(*chaosLogs, r.name+"-goroutines.txt"), b, 0o644)
		}
	}
	return strings.Join(parts, "; ")
}

// lastStart returns a process's output since its last start, cut short.
func lastStart(out string) string {
	return tailString(sinceLastStart(out), 1500)
}

// sinceLastStart returns a process's output since its last start.
func sinceLastStart(out string) string {
	if i := strings.LastIndex(out, "=== start "); i >= 0 {
		return out[i:]
	}
	return out
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// trackReclaim measures the time from a renderer's SIGKILL until none of
// the entries held (pending under its name as it died) is pending under it
// any more: claimed by a peer, or acked (by a peer or by its restart). A
// nil held is read after the kill.
func (f *chaosFaults) trackReclaim(name string, killed time.Time, held map[string][]string) {
	defer f.wg.Done()
	deadline := killed.Add(f.plan.settle)
	if held == nil {
		var firstErr, lastErr error
		_, err := proc.Poll(context.Background(), time.Until(deadline), "", func() (bool, error) {
			h, err := f.pendingOf(name, nil)
			if err != nil {
				lastErr = err
				if firstErr == nil {
					firstErr = err
					f.t.Logf("chaos: %s: pending list unreadable %v after its kill: %v", name, time.Since(killed).Round(time.Millisecond), err)
				}
				return false, nil
			}
			held = h
			return true, nil
		})
		if err != nil {
			f.errs.add("%s: pending list not readable after its kill: %v", name, lastErr)
			return
		}
	}
	total := 0
	for _, ids := range held {
		total += len(ids)
	}
	var left map[string][]string
	var lastErr error
	_, err := proc.Poll(context.Background(), time.Until(deadline), "", func() (bool, error) {
		left, lastErr = f.pendingOf(name, held)
		if lastErr != nil {
			return false, nil
		}
		if len(left) == 0 {
			return true, nil
		}
		held = left
		return false, nil
	})
	if err != nil {
		f.errs.add("%s: entries pending under it since its kill %v ago were never reclaimed: %v (err %v)", name, time.Since(killed), left, lastErr)
		return
	}
	f.mu.Lock()
	f.reclaims = append(f.reclaims, time.Since(killed))
	f.reclaimed = append(f.reclaimed, fmt.Sprintf("%s@%s:%dms/%d", name, killed.Format("05.000"), time.Since(killed).Milliseconds(), total))
	f.mu.Unlock()
}

// pendingOf returns the entries pending under consumer, per stream; with
// only, just those of only still pending under it. One pipeline: Redis
// with appendfsync always answers each round trip after an fsync.
func (f *chaosFaults) pendingOf(consumer string, only map[string][]string) (map[string][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cmds := map[string]*redis.XPendingExtCmd{}
	pipe := f.c.rdb.Pipeline()
	for _, g := range f.games {
		key := event.StreamKey(g)
		if only != nil && len(only[key]) == 0 {
			continue
		}
		cmds[key] = pipe.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: key, Group: f.c.group, Start: "-", End: "+", Count: 1 << 20, Consumer: consumer,
		})
	}
	_, _ = pipe.Exec(ctx) // each command's error is looked at below
	out := map[string][]string{}
	for key, cmd := range cmds {
		ps, err := cmd.Result()
		if err != nil && !isNoGroup(err) {
			return nil, err
		}
		if only == nil {
			for _, p := range ps {
				out[key] = append(out[key], p.ID)
			}
			continue
		}
		now := map[string]bool{}
		for _, p := range ps {
			now[p.ID] = true
		}
		for _, id := range only[key] {
			if now[id] {
				out[key] = append(out[key], id)
			}
		}
	}
	for k, v := range out {
		if len(v) == 0 {
			delete(out, k)
		}
	}
	return out, nil
}

// isNoGroup: a stream whose group does not exist yet has nothing pending.
func isNoGroup(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOGROUP")
}

// waitReclaims waits for the reclaim trackers (each ends by its deadline).
func (f *chaosFaults) waitReclaims() { f.wg.Wait() }

func (f *chaosFaults) maxReclaim() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m time.Duration
	for _, d := range f.reclaims {
		m = max(m, d)
	}
	return m
}

// check reports the schedule's own failures and that every fault happened.
func (f *chaosFaults) check() {
	t := f.t
	t.Helper()
	f.errs.report(t, "fault schedule")
	if f.kills < f.plan.minKills || f.terms < 1 || f.redisRestarts < 1 || f.outages < 1 {
		t.Errorf("faults: %d kills (want ≥ %d), %d SIGTERMs, %d Redis restarts, %d outages (want ≥ 1 each)",
			f.kills, f.plan.minKills, f.terms, f.redisRestarts, f.outages)
	}
	if (f.plan.diskFullAt > 0 && f.diskFulls != 1) || (f.plan.storeLossAt > 0 && f.storeLosses != 1) {
		t.Errorf("faults: %d full-disk spells, %d store losses (want 1 each)", f.diskFulls, f.storeLosses)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t.Logf("chaos: reclaims (name@kill:ms/entries): %s", strings.Join(f.reclaimed, " "))
	if len(f.reclaims) != f.kills {
		t.Errorf("reclaim measured for %d of %d kills", len(f.reclaims), f.kills)
	}
}

// fillDisk fills the store's tmpfs: every renderer's next store write
// fails, so each pauses with its entries in hand (docs/operations.md, "The
// disk under the store is full").
func (f *chaosFaults) fillDisk(now, start time.Time) {
	path, err := fillDisk(filepath.Dir(f.c.dbPath))
	if err != nil {
		f.t.Fatalf("chaos: fill the store's disk: %v", err)
	}
	f.t.Logf("chaos: %v: store's disk full (filled in %v) for %v", time.Since(start).Round(time.Millisecond),
		time.Since(now).Round(time.Millisecond), f.plan.diskFull)
	f.disk = diskSpell{done: true, filler: path, freeAt: time.Now().Add(f.plan.diskFull)}
	f.diskFulls++
}

// tendDisk, while the disk is full, watches for a renderer saying so on
// /readyz, and frees the disk when the spell is over. That none of it
// dead-letters a well-formed entry is checked at the end (checkDead).
func (f *chaosFaults) tendDisk(now, start time.Time) {
	d := &f.disk
	if d.freeAt.IsZero() {
		return
	}
	if !d.sawFull {
		for _, n := range f.nodes {
			if n.state != nodeUp {
				continue
			}
			if code, body := readyz(n.r); code == http.StatusServiceUnavailable && strings.Contains(body, "full") {
				f.t.Logf("chaos: %v: %s not ready: %s", now.Sub(start).Round(time.Millisecond), n.r.name, strings.TrimSpace(body))
				d.sawFull = true
				break
			}
		}
	}
	if now.Before(d.freeAt) {
		return
	}
	if err := freeDisk(filepath.Dir(f.c.dbPath), d.filler, f.plan.diskSize); err != nil {
		f.t.Fatalf("chaos: free the store's disk: %v", err)
	}
	f.t.Logf("chaos: %v: store's disk has space again", now.Sub(start).Round(time.Millisecond))
	if !d.sawFull {
		f.errs.add("full disk for %v: no renderer's /readyz said 503 … full", f.plan.diskFull)
	}
	d.freeAt, d.filler = time.Time{}, ""
}

// loseStore deletes the store file (and its -wal and -shm) under the
// running renderers, as a lost volume or an operator's rm would.
func (f *chaosFaults) loseStore(now, start time.Time) {
	f.storeLost.Store(true)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(f.c.dbPath + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			f.t.Fatalf("chaos: delete the store: %v", err)
		}
	}
	f.t.Logf("chaos: %v: store file deleted under the renderers", now.Sub(start).Round(time.Millisecond))
	f.loss = storeLoss{done: true, deadline: time.Now().Add(10 * time.Second), seen: map[*chaosNode]bool{}}
	f.storeLosses++
}

// tendLoss waits until every renderer says on /readyz that its store file
// is gone (they stop consuming), then restarts them all: the first one
// creates a new file, and each catches up from the streams by itself.
func (f *chaosFaults) tendLoss(now, start time.Time) {
	l := &f.loss
	if l.deadline.IsZero() {
		return
	}
	for _, n := range f.nodes {
		if l.seen[n] {
			continue
		}
		if code, body := readyz(n.r); code == http.StatusServiceUnavailable && strings.Contains(body, "deleted or replaced") {
			l.seen[n] = true
		}
	}
	if len(l.seen) < len(f.nodes) && now.Before(l.deadline) {
		return
	}
	if len(l.seen) < len(f.nodes) {
		var slow []string
		for _, n := range f.nodes {
			if !l.seen[n] {
				code, body := readyz(n.r)
				slow = append(slow, fmt.Sprintf("%s (%d %s)", n.r.name, code, strings.TrimSpace(body)))
			}
		}
		f.errs.add("store deleted: not every renderer said so on /readyz within 10s: %s", strings.Join(slow, "; "))
	}
	f.t.Logf("chaos: %v: every renderer not ready after the store's loss; restarting them", now.Sub(start).Round(time.Millisecond))
	for _, n := range f.nodes {
		n.r.Kill()
		n.state, n.downAt, n.nextTry, n.tries, n.afterTerm = nodeDown, now, now, 0, false
	}
	l.deadline = time.Time{}
}

// TestServingSince reads the serving time of a renderer's last start.
func TestServingSince(t *testing.T) {
	out := "=== start renderer (pid 1)\n" +
		`time=2026-12-03T12:56:11.514Z level=INFO msg="web: serving" addr=127.0.0.1:1` + "\n" +
		"=== start renderer (pid 2)\n" +
		`time=2026-12-03T12:56:26.774Z level=INFO msg="consumer name held; waiting for its lease to expire"` + "\n" +
		`time=2026-12-03T12:56:30.059Z level=INFO msg="web: serving" addr=127.0.0.1:1` + "\n"
	at, ok := servingSince(out)
	if want := time.Date(2026, 12, 3, 12, 56, 30, 59e6, time.UTC); !ok || !at.Equal(want) {
		t.Fatalf("servingSince: %v %v, want %v", at, ok, want)
	}
	if _, ok := servingSince(out + "=== start renderer (pid 3)\n"); ok {
		t.Fatal("a start that has not served yet read as serving")
	}
}
