package bench

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/proc"
	"github.com/codemojex/feed/internal/renderer"
	"github.com/codemojex/feed/web"
)

// InProc is a renderer run in this process by internal/renderer, exactly as
// cmd/renderer runs it, so that a run can be profiled with runtime/pprof.
type InProc struct {
	m *renderer.Main
}

// StartInProc starts an in-process renderer named consumer in group "feed".
func StartInProc(ctx context.Context, redisURL, dbPath, consumer string) (*InProc, error) {
	m := renderer.NewMain()
	m.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err := m.ParseFlags([]string{"-redis", redisURL, "-db", dbPath, "-http", "127.0.0.1:0", "-consumer", consumer})
	if err == nil {
		err = m.Run(ctx)
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	return &InProc{m: m}, nil
}

// URL is its web server's base URL.
func (p *InProc) URL() string { return "http://" + p.m.Addr() }

// Pid is this process's id.
func (p *InProc) Pid() int { return os.Getpid() }

// Stop closes every part, consumer first.
func (p *InProc) Stop() {
	if err := p.m.Close(); err != nil {
		slog.Warn("bench: in-process renderer stop", "err", err)
	}
}

// DefaultEngine is the websocket engine a renderer started without
// -ws-engine serves with: its flag's default, or $FEED_WS_ENGINE, which
// the renderer processes feedbench starts inherit.
func DefaultEngine() string {
	m := renderer.NewMain()
	if err := m.ParseFlags(nil); err != nil {
		return "?"
	}
	return m.Config.WSEngine
}

// OtherEngine is the engine that is not DefaultEngine, measured beside it.
func OtherEngine() string {
	if DefaultEngine() == web.WSEngineStd {
		return web.WSEngineNbio
	}
	return web.WSEngineStd
}

// target is a renderer the latency and fan-out benchmarks talk to: a real
// process or one wired in this process.
type target interface {
	URL() string
	Pid() int
	Stop()
}

// startTarget starts a renderer process, or an in-process one when bin is
// empty, and waits until it is ready.
func startTarget(ctx context.Context, bin, redisURL, dbPath, consumer, logDir string) (target, error) {
	if bin == "" {
		return StartInProc(ctx, redisURL, dbPath, consumer)
	}
	r, err := StartRenderer(bin, RendererArgs{RedisURL: redisURL, DB: dbPath, Consumer: consumer, LogDir: logDir})
	if err != nil {
		return nil, err
	}
	if err := r.WaitReady(ctx, 30*time.Second); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// stage is where the latency and fan-out benchmarks start: their own Redis,
// games seeded under a prefix, and one renderer that has consumed the seed.
type stage struct {
	redis *Redis
	rdb   redis.UniversalClient
	mint  *event.Minter
	games []string
	rend  target
}

// openStage starts Redis under dir/redis-NAME, seeds games (named after
// prefix), starts the renderer (bin, or in-process when bin is empty) on
// dir/NAME.db and waits until it has consumed the seed.
func openStage(ctx context.Context, bin, dir, name, prefix string, games int) (*stage, error) {
	st := &stage{}
	// On error the caller gets nil, so the stage is closed here; it is the
	// local st that is closed, never a nil result.
	if err := st.open(ctx, bin, dir, name, prefix, games); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func (st *stage) open(ctx context.Context, bin, dir, name, prefix string, games int) (err error) {
	if st.redis, err = StartRedis(mkdir(dir, "redis-"+name)); err != nil {
		return err
	}
	if st.rdb, err = st.redis.Client(); err != nil {
		return err
	}
	st.mint = event.NewMinter(time.Now().UnixNano())
	if st.games, err = SeedGames(ctx, st.rdb, st.mint, prefix, games); err != nil {
		return err
	}
	if st.rend, err = startTarget(ctx, bin, st.redis.URL(), filepath.Join(dir, name+".db"), prefix+"-1", dir); err != nil {
		return err
	}
	return st.waitConsumed(ctx, Keys(st.games), 30*time.Second, "seed events consumed")
}

// waitConsumed waits up to timeout until the renderers' group has read and
// acked every entry of keys.
func (st *stage) waitConsumed(ctx context.Context, keys []string, timeout time.Duration, what string) error {
	_, err := proc.Poll(ctx, timeout, what, func() (bool, error) {
		return Drained(ctx, st.rdb, "feed", keys)
	})
	return err
}

// Close stops the renderer, then Redis.
func (st *stage) Close() {
	if st.rend != nil {
		st.rend.Stop()
	}
	if st.rdb != nil {
		st.rdb.Close()
	}
	if st.redis != nil {
		st.redis.Close()
	}
}
