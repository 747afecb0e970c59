package feed_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// Keys where consumer child processes record what they did.
const (
	handledKey = "test:handled" // list of "consumer|evt_id|attempts"
	blockedKey = "test:blocked" // list of evt ids a child is stuck on
)

// TestHelperProcess is the body of a consumer child process; as a test of
// its own it does nothing. A child opens a Consumer from FEED_* variables,
// prints READY, records each handled entry in handledKey, and, with
// FEED_BLOCK=1, never finishes entries that carry block=1 (so they stay
// pending until the process is SIGKILLed). It exits 3 when the consumer
// name is taken, 0 after SIGTERM.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("FEED_HELPER") != "1" {
		return
	}
	os.Exit(helperMain())
}

func helperMain() int {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("FEED_ADDR")})
	defer rdb.Close()
	name := os.Getenv("FEED_CONSUMER")
	minIdle, err := time.ParseDuration(os.Getenv("FEED_MIN_IDLE"))
	if err != nil {
		minIdle = 30 * time.Second
	}
	block := os.Getenv("FEED_BLOCK") == "1"
	cfg := feed.Config{
		Client: rdb, Group: group, Consumer: name,
		Streams:    feed.StaticStreams(strings.Split(os.Getenv("FEED_STREAMS"), ",")...),
		MinIdle:    minIdle,
		ClaimEvery: 100 * time.Millisecond,
		Block:      100 * time.Millisecond,
		LeaseTTL:   time.Second,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Handler: func(ctx context.Context, m feed.Message) error {
			rec := fmt.Sprintf("%s|%s|%d", name, m.ID, m.Attempts)
			if err := rdb.RPush(ctx, handledKey, rec).Err(); err != nil {
				return err
			}
			if block && m.Payload["block"] == "1" {
				rdb.RPush(ctx, blockedKey, m.ID)
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		},
	}
	// Before READY, so that a SIGTERM right after it is not fatal.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	var c *feed.Consumer
	for {
		c, err = feed.Open(context.Background(), cfg)
		if err == nil {
			break
		}
		if errors.Is(err, feed.ErrConsumerTaken) && os.Getenv("FEED_RETRY") == "1" {
			time.Sleep(20 * time.Millisecond) // retry period of a supervisor
			continue
		}
		fmt.Println("OPEN-ERR", err)
		if errors.Is(err, feed.ErrConsumerTaken) {
			return 3
		}
		return 1
	}
	fmt.Println("READY")
	<-sig
	if err := c.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		return 1
	}
	return 0
}

// child is a consumer child process.
type child struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan struct{}
	err   error // Wait's, after done
}

// startChild starts a consumer child process; it is SIGKILLed when the
// test ends if still running.
func startChild(tb testing.TB, addr, name string, env ...string) *child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FEED_HELPER=1", "FEED_ADDR="+addr, "FEED_CONSUMER="+name)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = tbWriter{tb}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 16), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.err = cmd.Wait()
		close(c.done)
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
	})
	return c
}

// line waits for the child's next stdout line.
func (c *child) line(tb testing.TB, timeout time.Duration) string {
	tb.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			<-c.done
			tb.Fatalf("child exited: %v", c.err)
		}
		return l
	case <-time.After(timeout):
		tb.Fatalf("no line from child within %v", timeout)
	}
	return ""
}

func (c *child) sigkill(tb testing.TB) {
	tb.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	<-c.done
}

type handled struct {
	consumer, id string
	attempts     int64
}

func handledLog(tb testing.TB, rdb *redis.Client) []handled {
	tb.Helper()
	xs, err := rdb.LRange(context.Background(), handledKey, 0, -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]handled, len(xs))
	for i, x := range xs {
		p := strings.Split(x, "|")
		n, _ := strconv.ParseInt(p[2], 10, 64)
		out[i] = handled{p[0], p[1], n}
	}
	return out
}

func llen(tb testing.TB, rdb *redis.Client, key string) int64 {
	n, err := rdb.LLen(context.Background(), key).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func pendingOf(tb testing.TB, rdb *redis.Client, s, consumer string) int64 {
	p, err := rdb.XPendingExt(context.Background(), &redis.XPendingExtArgs{
		Stream: s, Group: group, Start: "-", End: "+", Count: 1000, Consumer: consumer}).Result()
	if err != nil {
		return -1
	}
	return int64(len(p))
}

// TestCrashRestartRecoversOwnPending is proof 1: a consumer process is
// SIGKILLed holding un-acked entries; restarted with the same name it
// recovers them at once (attempts 2), before anything new.
func TestCrashRestartRecoversOwnPending(t *testing.T) {
	srv, rdb := mustStart(t)
	s := stream("crash")
	var stuck []string
	for range 3 {
		stuck = append(stuck, add(t, rdb, s, "block", "1"))
	}
	env := []string{"FEED_STREAMS=" + s, "FEED_MIN_IDLE=30s"}
	a := startChild(t, srv.Addr, "r1", append(env, "FEED_BLOCK=1")...)
	if l := a.line(t, 10*time.Second); l != "READY" {
		t.Fatalf("child said %q", l)
	}
	waitFor(t, 5*time.Second, "child stuck holding three entries", func() bool {
		return llen(t, rdb, blockedKey) == 1 && pendingOf(t, rdb, s, "r1") == 3
	})
	a.sigkill(t)
	fresh := []string{add(t, rdb, s), add(t, rdb, s)}

	b := startChild(t, srv.Addr, "r1", append(env, "FEED_RETRY=1")...)
	if l := b.line(t, 10*time.Second); l != "READY" {
		t.Fatalf("restarted child said %q", l)
	}
	// MinIdle is 30s: only the recovery of the own pending list can bring
	// the stuck entries back within this wait.
	waitFor(t, 5*time.Second, "recovery and new entries", func() bool { return llen(t, rdb, handledKey) == 1+5 })
	log := handledLog(t, rdb)[1:]
	for i, h := range log {
		want := handled{"r1", "", 1}
		if i < 3 {
			want.id, want.attempts = stuck[i], 2
		} else {
			want.id = fresh[i-3]
		}
		if h != want {
			t.Errorf("handled[%d] = %+v, want %+v", i, h, want)
		}
	}
	waitFor(t, 10*time.Second, "all acked", func() bool { return pending(t, rdb, s) == 0 })
}

// TestDeadPeerReclaimed is proof 2: a consumer is SIGKILLed and never
// returns; a survivor reclaims its entries after MinIdle, and handles each
// entry once.
func TestDeadPeerReclaimed(t *testing.T) {
	srv, rdb := mustStart(t)
	s := stream("peer")
	var ids []string
	for range 5 {
		ids = append(ids, add(t, rdb, s, "block", "1"))
	}
	a := startChild(t, srv.Addr, "a", "FEED_STREAMS="+s, "FEED_BLOCK=1")
	if l := a.line(t, 10*time.Second); l != "READY" {
		t.Fatalf("child said %q", l)
	}
	waitFor(t, 5*time.Second, "child holding five entries", func() bool { return pendingOf(t, rdb, s, "a") == 5 })
	a.sigkill(t)

	var rec recorder
	cfg := baseConfig(t, rdb, "b", s)
	cfg.Handler = rec.handler
	b := mustOpen(t, cfg)
	waitFor(t, 5*time.Second, "survivor handled all", func() bool { return len(rec.ids()) == 5 })
	for _, id := range ids {
		if n := rec.count(id); n != 1 {
			t.Errorf("%s handled %d times", id, n)
		}
	}
	for _, m := range rec.all() {
		if m.Attempts != 2 {
			t.Errorf("%s attempts %d, want 2", m.ID, m.Attempts)
		}
	}
	if st := b.Stats(); st.Claimed != 5 {
		t.Errorf("claimed %d", st.Claimed)
	}
	waitFor(t, 10*time.Second, "nothing pending", func() bool { return pending(t, rdb, s) == 0 })
}

// TestConsumerNameHeldByOneProcess is proof 6.
func TestConsumerNameHeldByOneProcess(t *testing.T) {
	srv, rdb := mustStart(t)
	s := stream("lease")
	a := startChild(t, srv.Addr, "dup", "FEED_STREAMS="+s)
	if l := a.line(t, 10*time.Second); l != "READY" {
		t.Fatalf("child said %q", l)
	}
	b := startChild(t, srv.Addr, "dup", "FEED_STREAMS="+s)
	if l := b.line(t, 10*time.Second); !strings.HasPrefix(l, "OPEN-ERR") || !strings.Contains(l, "held by a live process") {
		t.Errorf("second process said %q", l)
	}
	<-b.done
	var ee *exec.ExitError
	if !errors.As(b.err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("second process exit: %v, want code 3", b.err)
	}
	// In-process too, with the sentinel.
	cfg := baseConfig(t, rdb, "dup", s)
	cfg.Handler = func(context.Context, feed.Message) error { return nil }
	if _, err := feed.Open(context.Background(), cfg); !errors.Is(err, feed.ErrConsumerTaken) {
		t.Errorf("Open = %v, want ErrConsumerTaken", err)
	}

	a.sigkill(t)
	killed := time.Now()
	// The name is free once the dead process's lease lapses, within its
	// TTL (1 s) of the kill: read off the key itself, since the restart's
	// own time holds a process start, slow on a loaded host.
	pttl, err := rdb.PTTL(context.Background(), event.LeaseKey(group, "dup")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if pttl != -2*time.Nanosecond && (pttl <= 0 || pttl > time.Second) { // -2: gone already
		t.Errorf("the killed process's lease lives %v more, want at most its 1s TTL", pttl)
	}
	c := startChild(t, srv.Addr, "dup", "FEED_STREAMS="+s, "FEED_RETRY=1")
	if l := c.line(t, 10*time.Second); l != "READY" {
		t.Fatalf("restart said %q", l)
	}
	t.Logf("lease left %v at the SIGKILL; name taken again %v after it (lease TTL 1s)", pttl, time.Since(killed))
	// Graceful exit releases the lease at once.
	c.cmd.Process.Signal(syscall.SIGTERM)
	<-c.done
	if c.err != nil {
		t.Errorf("graceful exit: %v", c.err)
	}
	if n, err := rdb.Exists(context.Background(), event.LeaseKey(group, "dup")).Result(); err != nil {
		t.Fatalf("lease after graceful exit: %v", err)
	} else if n != 0 {
		t.Error("lease left after graceful exit")
	}
}
