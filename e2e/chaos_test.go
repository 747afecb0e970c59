package e2e_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/proc"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// chaosLong switches TestChaos to its long form (make chaos).
var chaosLong = flag.Bool("chaos.long", false, "run TestChaos in its long form (about 5 minutes, 200,000 events)")

// chaosEvents, when positive, overrides the events per game of either
// form: a shorter long run that still goes through every fault.
var chaosEvents = flag.Int("chaos.events", 0, "events per game (0: the form's own, 2,000 short, 10,000 long)")

// chaosLogs, when set, is a directory TestChaos writes every process's
// output to, pass or fail, for diagnosis.
var chaosClientsN = flag.Int("chaos.clients", 0, "live clients (0: the form's own, 50); more clients read more frames, for a rare bad frame")

var chaosLogs = flag.String("chaos.logs", "", "directory to write TestChaos's process logs to")

// chaosPlan is the shape of one chaos run: the load and the fault schedule.
type chaosPlan struct {
	games, events int     // gamesim -games, -events (per game)
	rate          float64 // gamesim -rate (events/s over all games)
	bad           float64 // gamesim -bad
	seed          int64
	clients       int // live clients: websockets, a third of them event streams

	killEvery time.Duration // a random renderer is SIGKILLed this often
	minKills  int           // ... at least this many times, even after the writer is done
	// Redis and graceful faults, as offsets from the writer's start; the
	// long form repeats them every cycle.
	redisRestartAt, termAt, outageAt time.Duration
	outage                           time.Duration
	cycle                            time.Duration // 0: once
	// Faults underneath the renderers, once per run (0: none): the store's
	// tmpfs filled for diskFull, and the store file deleted under the
	// running renderers, which are then restarted and catch up.
	diskFullAt, diskFull time.Duration
	storeLossAt          time.Duration
	diskSize             string // size of the store's tmpfs (with diskFullAt)

	settle time.Duration // deadline for each convergence after the faults
}

func chaosPlanFor(long bool) chaosPlan {
	p := chaosPlan{
		games: 20, events: 2000, rate: 1500, bad: 0.01, seed: 6, clients: 50,
		killEvery: 2 * time.Second, minKills: 8,
		redisRestartAt: 7 * time.Second, termAt: 11 * time.Second, outageAt: 15 * time.Second,
		outage: 5 * time.Second, settle: 90 * time.Second,
	}
	if long {
		p.events, p.rate, p.cycle, p.settle = 10000, 700, time.Minute, 3*time.Minute
		p.diskFullAt, p.diskFull, p.storeLossAt, p.diskSize = 25*time.Second, 8*time.Second, 40*time.Second, "1g"
	}
	if *chaosEvents > 0 {
		p.events = *chaosEvents
	}
	if *chaosClientsN > 0 {
		p.clients = *chaosClientsN
	}
	return p
}

func (p chaosPlan) gameNames() []string {
	out := make([]string, p.games)
	for i := range out {
		out[i] = gamesim.GameName("chaos", i+1)
	}
	return out
}

// TestChaos runs the real binaries under load while renderers and Redis
// die, then proves nothing was lost or doubled anywhere: streams, store,
// dead letters, the group's pending lists, scores and every websocket
// client's timeline (issue 6, chaos suite). -chaos.long runs the long form.
func TestChaos(t *testing.T) {
	plan := chaosPlanFor(*chaosLong)
	games := plan.gameNames()
	c := newCluster(t, redistest.Options{AOF: true})
	if plan.diskFullAt > 0 {
		if dir, ok := chaosTmpfs(t, plan.diskSize); ok {
			c.dbPath = filepath.Join(dir, "feed.db")
		} else {
			plan.diskFullAt = 0
		}
	}
	var storeLost atomic.Bool // the clients expect resets from then on

	names := []string{"chaos-a", "chaos-b", "chaos-c"}
	nodes := make([]*chaosNode, len(names))
	addrs := make([]string, len(names))
	for i, name := range names {
		r := c.start(name, "-log-level", "info")
		nodes[i] = &chaosNode{r: r, state: nodeUp}
		addrs[i] = r.addr
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keepChaosLogs(t, c, nodes)
	clients := startChaosClients(ctx, plan, games, addrs, &storeLost)

	sim := proctest.Start(t, "gamesim", "gamesim", []string{
		"-redis", c.redis.URL(),
		"-games", strconv.Itoa(plan.games),
		"-events", strconv.Itoa(plan.events),
		"-rate", strconv.FormatFloat(plan.rate, 'f', -1, 64),
		"-seed", strconv.FormatInt(plan.seed, 10),
		"-prefix", "chaos",
		"-bad", strconv.FormatFloat(plan.bad, 'f', -1, 64),
	})

	keepChaosLogs(t, c, []*chaosNode{{r: &renderer{Proc: sim, name: "gamesim"}}})
	f := &chaosFaults{
		t: t, c: c, plan: plan, nodes: nodes, sim: sim, games: games, storeLost: &storeLost,
		rng: rand.New(rand.NewPCG(uint64(plan.seed), 0x6a6f6b65)),
	}
	start := time.Now()
	f.run()
	t.Logf("chaos: faults over after %v: %d kills, %d graceful restarts, %d Redis restarts, %d outages, %d full disks, %d store losses, %d refused starts, %d restarts seen serving by their log (this process's probes late)",
		time.Since(start).Round(time.Millisecond), f.kills, f.terms, f.redisRestarts, f.outages, f.diskFulls, f.storeLosses, f.refused, f.lateProbes)

	waitCtx, waitCancel := context.WithTimeout(ctx, plan.settle)
	defer waitCancel()
	if err := sim.Wait(waitCtx); err != nil {
		t.Fatalf("gamesim: %v", err)
	}
	simGood, simBad := gamesimTotals(t, sim.Output())
	// The writer's own summary is no lower bound: a gamesim that wrote
	// fewer entries (or none) and said so would leave every check below
	// comparing small sets. It must have written the plan, malformed
	// entries among them, so that the dead-letter checks check something.
	if want := int64(plan.games * plan.events); simGood+simBad != want || simGood == 0 || (plan.bad > 0 && simBad == 0) {
		t.Fatalf("gamesim wrote %d well-formed and %d malformed entries; the plan is %d games × %d events = %d, with about %.0f%% malformed",
			simGood, simBad, plan.games, plan.events, want, 100*plan.bad)
	}

	// The streams are final now: the truth to compare everything with.
	truth := readStreams(t, c, games)
	for _, g := range games {
		if len(truth.games[g].good) == 0 {
			t.Errorf("stream of %s holds no well-formed entry: nothing of that game is checked", g)
		}
	}
	if truth.good != simGood || truth.bad != simBad {
		t.Errorf("streams hold %d well-formed and %d malformed entries; gamesim reported %d and %d",
			truth.good, truth.bad, simGood, simBad)
	}

	// Convergence, each with a deadline: store, dead letters, pending, clients.
	db := openChaosDB(t, c.dbPath)
	settled := chaosWait(t, plan.settle, "store to hold every well-formed entry", func() (bool, string) {
		n := db.count()
		return n >= truth.good, fmt.Sprintf("holds %d of %d", n, truth.good)
	}) && chaosWait(t, plan.settle, "dead-letter streams to hold every malformed entry", func() (bool, string) {
		n := deadCount(c, games)
		return n >= truth.bad, fmt.Sprintf("hold %d of %d", n, truth.bad)
	}) && chaosWait(t, plan.settle, "no entry pending in the group", func() (bool, string) {
		n := pendingTotal(c, games)
		return n == 0, fmt.Sprintf("%d pending", n)
	})
	f.waitReclaims()
	st := db.timeline(t)
	if settled {
		chaosWait(t, plan.settle, "every live client to show its game's stored lines", func() (bool, string) {
			lag := clients.lagging(st)
			return lag == "", lag
		})
	}
	cancel()
	clients.wait()

	lost, doubled := checkStore(t, truth, st)
	dv := readDead(t, c, games)
	l, d := checkDead(t, truth, dv)
	lost, doubled = lost+l, doubled+d
	l, d = clients.check(t, st)
	lost, doubled = lost+l, doubled+d
	checkScores(t, truth, db.players(t))
	f.check()

	t.Logf("chaos: clients: %s", clients.figures())
	t.Logf("written=%d stored=%d dead=%d lost=%d doubled=%d kills=%d max_reclaim_ms=%d",
		truth.good+truth.bad, st.rows, dv.total, lost, doubled, f.kills, f.maxReclaim().Milliseconds())
}

// keepChaosLogs writes the nodes' output (and Redis's log) to -chaos.logs
// when the test ends.
func keepChaosLogs(t *testing.T, c *cluster, nodes []*chaosNode) {
	if *chaosLogs == "" {
		return
	}
	t.Cleanup(func() {
		if err := os.MkdirAll(*chaosLogs, 0o755); err != nil {
			t.Log(err)
			return
		}
		for _, n := range nodes {
			_ = os.WriteFile(filepath.Join(*chaosLogs, n.r.name+".log"), []byte(n.r.Output()), 0o644)
		}
		if b, err := os.ReadFile(filepath.Join(c.redis.Dir, "redis.log")); err == nil {
			_ = os.WriteFile(filepath.Join(*chaosLogs, "redis.log"), b, 0o644)
		}
	})
}

// gamesimTotals reads gamesim's final line: "gamesim: done: N entries (G
// good, B malformed) over …".
func gamesimTotals(t *testing.T, out string) (good, bad int64) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "gamesim: done: ") {
			continue
		}
		var n int64
		if _, err := fmt.Sscanf(line, "gamesim: done: %d entries (%d good, %d malformed)", &n, &good, &bad); err != nil {
			t.Fatalf("gamesim summary %q: %v", line, err)
		}
		return good, bad
	}
	t.Fatalf("gamesim printed no summary line")
	return 0, 0
}

// chaosWait polls cond (proc.Poll) until it holds, or reports a failure at
// the deadline with cond's last account of the state and returns false, so
// that the checks that follow can say precisely what is missing.
func chaosWait(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) bool {
	t.Helper()
	var state string
	took, err := proc.Poll(context.Background(), timeout, what, func() (bool, error) {
		ok, s := cond()
		state = s
		return ok, nil
	})
	if err != nil {
		t.Errorf("%v: %s", err, state)
		return false
	}
	t.Logf("chaos: %s: after %v", what, took.Round(time.Millisecond))
	return true
}

// pendingTotal sums XPENDING over the games' streams, in one pipeline; -1
// when Redis does not answer.
func pendingTotal(c *cluster, games []string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.XPendingCmd, len(games))
	for i, g := range games {
		cmds[i] = pipe.XPending(ctx, event.StreamKey(g), c.group)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return -1
	}
	var n int64
	for _, cmd := range cmds {
		n += cmd.Val().Count
	}
	return n
}

// errorList collects failures found by goroutines, reported by the test's
// own goroutine.
type errorList struct {
	mu   sync.Mutex
	errs []string
	n    int
}

func (e *errorList) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if len(e.errs) < 20 {
		e.errs = append(e.errs, fmt.Sprintf(format, args...))
	}
}

func (e *errorList) report(t *testing.T, what string) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n > 0 {
		t.Errorf("%s: %d failures, first ones:\n  %s", what, e.n, strings.Join(e.errs, "\n  "))
	}
}
