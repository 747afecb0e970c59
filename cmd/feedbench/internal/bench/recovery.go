package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/proc"
)

// RecoveryConfig sizes the recovery benchmark.
type RecoveryConfig struct {
	Dir        string
	Renderer   string
	Games      int
	Pending    int           // entries in the pending list to recover
	MinIdle    time.Duration // the renderers' -min-idle
	ClaimEvery time.Duration // the renderers' -claim-every
	Log        io.Writer
}

// RecoveryResult holds the recovery figures.
type RecoveryResult struct {
	Cfg RecoveryConfig
	// Restart: a renderer started under the name of a consumer that read
	// Pending entries and died without acking them.
	RestartReady, RestartDrained time.Duration
	// Crash: a renderer SIGKILLed with entries in hand and restarted at once
	// under its name (retried like a supervisor while the dead process's
	// lease on the name runs out).
	CrashPending int64
	CrashStarts  int
	CrashDrained time.Duration
	// Peer: one of two renderers SIGKILLed with entries in hand; the time
	// until the survivor reclaimed them all.
	PeerPending int64
	PeerClaimed time.Duration
}

// Recovery measures the reader law's recovery paths on real processes.
func Recovery(ctx context.Context, cfg RecoveryConfig) (RecoveryResult, error) {
	res := RecoveryResult{Cfg: cfg}
	if err := recoverRestart(ctx, cfg, &res); err != nil {
		return res, fmt.Errorf("restart: %w", err)
	}
	if err := recoverCrash(ctx, cfg, &res); err != nil {
		return res, fmt.Errorf("crash: %w", err)
	}
	if err := recoverPeer(ctx, cfg, &res); err != nil {
		return res, fmt.Errorf("peer: %w", err)
	}
	return res, nil
}

// prefill writes n entries over games with gamesim and returns the keys.
func prefill(ctx context.Context, rdb redis.UniversalClient, prefix string, games, n int) ([]string, error) {
	sum, err := gamesim.Run(ctx, rdb, gamesim.Config{Games: games, Events: n / games, Seed: 2, Prefix: prefix}, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: prefill: %w", err)
	}
	keys := make([]string, len(sum.Games))
	for i, g := range sum.Games {
		keys[i] = g.Stream
	}
	return keys, nil
}

// withRedis runs f against a new Redis with its data under cfg.Dir/name,
// stopped when f returns.
func withRedis(cfg RecoveryConfig, name string, f func(r *Redis, rdb redis.UniversalClient) error) error {
	r, err := StartRedis(mkdir(cfg.Dir, name))
	if err != nil {
		return err
	}
	defer r.Close()
	rdb, err := r.Client()
	if err != nil {
		return err
	}
	defer rdb.Close()
	return f(r, rdb)
}

// ownDrained waits until consumer holds no pending entry of keys.
func ownDrained(ctx context.Context, rdb redis.UniversalClient, consumer string, keys []string) error {
	_, err := proc.Poll(ctx, time.Minute, consumer+"'s pending list drained", func() (bool, error) {
		n, err := PendingOf(ctx, rdb, "feed", consumer, keys)
		return n == 0, err
	})
	return err
}

func recoverRestart(ctx context.Context, cfg RecoveryConfig, res *RecoveryResult) error {
	return withRedis(cfg, "redis-recovery-restart", func(r *Redis, rdb redis.UniversalClient) error {
		return recoverRestartOn(ctx, cfg, res, r, rdb)
	})
}

func recoverRestartOn(ctx context.Context, cfg RecoveryConfig, res *RecoveryResult, r *Redis, rdb redis.UniversalClient) error {
	keys, err := prefill(ctx, rdb, "rr", cfg.Games, cfg.Pending)
	if err != nil {
		return err
	}
	// A consumer "rr-1" reads everything and dies before acking anything.
	streams := make([]string, 0, 2*len(keys))
	streams = append(streams, keys...)
	for _, k := range keys {
		if err := rdb.XGroupCreateMkStream(ctx, k, "feed", "0").Err(); err != nil {
			return err
		}
		streams = append(streams, ">")
	}
	for {
		got, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "feed", Consumer: "rr-1", Streams: streams, Count: 1000, Block: -1}).Result()
		if err == redis.Nil || (err == nil && len(got) == 0) {
			break
		}
		if err != nil {
			return err
		}
	}
	pending, err := PendingOf(ctx, rdb, "feed", "rr-1", keys)
	if err != nil {
		return err
	}
	start := time.Now()
	rend, err := StartRenderer(cfg.Renderer, RendererArgs{
		RedisURL: r.URL(), DB: filepath.Join(cfg.Dir, "recovery-restart.db"), Consumer: "rr-1", LogDir: cfg.Dir,
	})
	if err != nil {
		return err
	}
	defer rend.Stop()
	if err := rend.WaitReady(ctx, 30*time.Second); err != nil {
		return err
	}
	res.RestartReady = time.Since(start)
	if err := ownDrained(ctx, rdb, "rr-1", keys); err != nil {
		return err
	}
	res.RestartDrained = time.Since(start)
	fmt.Fprintf(cfg.Log, "recovery: restart: ready in %v, own pending list (%d) drained in %v\n",
		res.RestartReady.Round(time.Millisecond), pending, res.RestartDrained.Round(time.Millisecond))
	return nil
}

// stopWithPending SIGSTOPs rend at a moment its consumer holds entries
// pending, and returns how many; the caller then SIGKILLs it. Whenever the
// group has consumed everything before that moment came, refill writes
// more.
func stopWithPending(ctx context.Context, rdb redis.UniversalClient, rend *Renderer, keys []string, refill func() error) (int64, error) {
	var n int64
	_, err := proc.Poll(ctx, time.Minute, "renderer caught with entries in hand", func() (bool, error) {
		p, err := PendingOf(ctx, rdb, "feed", rend.Args.Consumer, keys)
		if err != nil {
			return false, err
		}
		if p == 0 {
			if done, err := Drained(ctx, rdb, "feed", keys); err != nil || !done {
				return false, err
			}
			return false, refill()
		}
		if err := rend.Signal(syscall.SIGSTOP); err != nil {
			return false, err
		}
		if n, err = PendingOf(ctx, rdb, "feed", rend.Args.Consumer, keys); err != nil {
			return false, err
		}
		if n == 0 { // it acked them between our look and the stop
			return false, rend.Signal(syscall.SIGCONT)
		}
		return true, nil
	})
	return n, err
}

func recoverCrash(ctx context.Context, cfg RecoveryConfig, res *RecoveryResult) error {
	return withRedis(cfg, "redis-recovery-crash", func(r *Redis, rdb redis.UniversalClient) error {
		return recoverCrashOn(ctx, cfg, res, r, rdb)
	})
}

func recoverCrashOn(ctx context.Context, cfg RecoveryConfig, res *RecoveryResult, r *Redis, rdb redis.UniversalClient) error {
	args := RendererArgs{RedisURL: r.URL(), DB: filepath.Join(cfg.Dir, "recovery-crash.db"), Consumer: "rc-1",
		LogDir: cfg.Dir, GamesRefresh: 100 * time.Millisecond}
	rend, err := StartRenderer(cfg.Renderer, args)
	if err != nil {
		return err
	}
	defer rend.Stop()
	if err := rend.WaitReady(ctx, 30*time.Second); err != nil {
		return err
	}
	keys, err := prefill(ctx, rdb, "rc", cfg.Games, cfg.Pending)
	if err != nil {
		return err
	}
	refill := func() error {
		_, err := prefill(ctx, rdb, "rc", cfg.Games, cfg.Pending)
		return err
	}
	if res.CrashPending, err = stopWithPending(ctx, rdb, rend, keys, refill); err != nil {
		return err
	}
	rend.Kill()
	start := time.Now()
	// Restart at once, like a supervisor; while the dead process's lease on
	// the name runs, the new one refuses to start and is started again.
	for {
		res.CrashStarts++
		if err := rend.Start(); err != nil {
			return err
		}
		if err := rend.WaitReady(ctx, 30*time.Second); err == nil {
			break
		} else if !rend.Exited() {
			return err
		}
		if time.Since(start) > time.Minute {
			return fmt.Errorf("bench: renderer did not come back within a minute")
		}
		time.Sleep(100 * time.Millisecond) // a supervisor's restart delay
	}
	if err := ownDrained(ctx, rdb, "rc-1", keys); err != nil {
		return err
	}
	res.CrashDrained = time.Since(start)
	fmt.Fprintf(cfg.Log, "recovery: crash: %d pending at SIGKILL, restarted (%d starts) and drained in %v\n",
		res.CrashPending, res.CrashStarts, res.CrashDrained.Round(time.Millisecond))
	return nil
}

func recoverPeer(ctx context.Context, cfg RecoveryConfig, res *RecoveryResult) error {
	return withRedis(cfg, "redis-recovery-peer", func(r *Redis, rdb redis.UniversalClient) error {
		return recoverPeerOn(ctx, cfg, res, r, rdb)
	})
}

func recoverPeerOn(ctx context.Context, cfg RecoveryConfig, res *RecoveryResult, r *Redis, rdb redis.UniversalClient) error {
	db := filepath.Join(cfg.Dir, "recovery-peer.db")
	var rends []*Renderer
	for _, name := range []string{"rp-a", "rp-b"} {
		rend, err := StartRenderer(cfg.Renderer, RendererArgs{RedisURL: r.URL(), DB: db, Consumer: name, LogDir: cfg.Dir,
			MinIdle: cfg.MinIdle, ClaimEvery: cfg.ClaimEvery, GamesRefresh: 100 * time.Millisecond})
		if err != nil {
			return err
		}
		defer rend.Stop()
		if err := rend.WaitReady(ctx, 30*time.Second); err != nil {
			return err
		}
		rends = append(rends, rend)
	}
	keys, err := prefill(ctx, rdb, "rp", cfg.Games, cfg.Pending)
	if err != nil {
		return err
	}
	refill := func() error {
		_, err := prefill(ctx, rdb, "rp", cfg.Games, cfg.Pending)
		return err
	}
	victim := rends[1]
	if res.PeerPending, err = stopWithPending(ctx, rdb, victim, keys, refill); err != nil {
		return err
	}
	victim.Kill()
	start := time.Now()
	if _, err := proc.Poll(ctx, cfg.MinIdle+cfg.ClaimEvery+time.Minute, "dead peer's entries reclaimed", func() (bool, error) {
		n, err := PendingOf(ctx, rdb, "feed", "rp-b", keys)
		return n == 0, err
	}); err != nil {
		return err
	}
	res.PeerClaimed = time.Since(start)
	if _, err := proc.Poll(ctx, time.Minute, "all consumed", func() (bool, error) {
		return Drained(ctx, rdb, "feed", keys)
	}); err != nil {
		return err
	}
	fmt.Fprintf(cfg.Log, "recovery: peer: %d pending at SIGKILL, reclaimed by the survivor in %v (min-idle %v + claim-every %v)\n",
		res.PeerPending, res.PeerClaimed.Round(time.Millisecond), cfg.MinIdle, cfg.ClaimEvery)
	return nil
}

// reclaimSlack is the time the survivor is given, after the first claim
// beat past min-idle, to claim the dead peer's entries and commit them.
const reclaimSlack = 500 * time.Millisecond

// Rows are the table's recovery figures.
func (r RecoveryResult) Rows() []Row {
	c := r.Cfg
	bound := c.MinIdle + c.ClaimEvery
	return []Row{
		{Bench: "recovery", Metric: fmt.Sprintf("restart → own pending list drained (%d entries left by a dead consumer of that name; process start to XPENDING = 0; ready after %v)",
			c.Pending, r.RestartReady.Round(time.Millisecond)),
			Value: r.RestartDrained.Round(time.Millisecond).String()},
		{Bench: "recovery", Metric: fmt.Sprintf("SIGKILL with %d entries in hand → restarted at once under its name → own pending drained (%s; the dead process's lease on the name lives up to 5 s)",
			r.CrashPending, starts(r.CrashStarts)),
			Value: r.CrashDrained.Round(time.Millisecond).String()},
		{Bench: "recovery", Metric: fmt.Sprintf("peer SIGKILLed with %d entries in hand → all reclaimed by the survivor (-min-idle %v, -claim-every %v)",
			r.PeerPending, c.MinIdle, c.ClaimEvery),
			Value: r.PeerClaimed.Round(time.Millisecond).String(), Target: fmt.Sprintf("≤ min-idle + claim-every = %v, + %v to claim and commit them", bound, reclaimSlack),
			Met: verdict(r.PeerClaimed <= bound+reclaimSlack)},
	}
}

func starts(n int) string {
	if n == 1 {
		return "started once"
	}
	return fmt.Sprintf("started %d times", n)
}
