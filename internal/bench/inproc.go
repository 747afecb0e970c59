package bench

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/pipeline"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

// InProc is a renderer wired in this process the way cmd/renderer wires
// it (store, pipeline, consumer, doorbell, web), so that a run can be
// profiled with runtime/pprof.
type InProc struct {
	rdb      *redis.Client
	db       *store.DB
	consumer *feed.Consumer
	web      *web.Server
	doorbell chan struct{}
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// StartInProc starts an in-process renderer named consumer in group "feed".
func StartInProc(ctx context.Context, redisURL, dbPath, consumer string) (*InProc, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, err
	}
	p := &InProc{rdb: redis.NewClient(opt), doorbell: make(chan struct{}, 1)}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if p.db, err = store.Open(ctx, dbPath); err != nil {
		p.Stop()
		return nil, err
	}
	pl := &pipeline.Pipeline{DB: p.db, Renderer: consumer, Committed: func(ctx context.Context, _ int) {
		p.wake()
		p.rdb.Publish(ctx, event.DoorbellChannel, consumer)
	}}
	p.consumer, err = feed.Open(ctx, feed.Config{
		Client: p.rdb, Group: "feed", Consumer: consumer, Streams: feed.RegistryStreams(p.rdb),
		BatchHandler: pl.Handle, Logger: log,
	})
	if err != nil {
		p.Stop()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ps := p.rdb.Subscribe(runCtx, event.DoorbellChannel)
		defer ps.Close()
		ch := ps.Channel()
		for {
			select {
			case <-runCtx.Done():
				return
			case _, ok := <-ch:
				if !ok {
					return
				}
				p.wake()
			}
		}
	}()
	p.web, err = web.Open(web.Config{Addr: "127.0.0.1:0", Store: p.db, Doorbell: p.doorbell, Logger: log})
	if err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *InProc) wake() {
	select {
	case p.doorbell <- struct{}{}:
	default:
	}
}

// URL is its web server's base URL.
func (p *InProc) URL() string { return p.web.URL() }

// Pid is this process's id.
func (p *InProc) Pid() int { return os.Getpid() }

// Stop closes every part, consumer first.
func (p *InProc) Stop() {
	var errs []error
	if p.consumer != nil {
		errs = append(errs, p.consumer.Close())
	}
	if p.web != nil {
		errs = append(errs, p.web.Close())
	}
	if p.cancel != nil {
		p.cancel()
	}
	p.wg.Wait()
	if p.db != nil {
		errs = append(errs, p.db.Close())
	}
	errs = append(errs, p.rdb.Close())
	if err := errors.Join(errs...); err != nil {
		slog.Warn("bench: in-process renderer stop", "err", err)
	}
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
	rdb   *redis.Client
	mint  *event.Minter
	games []string
	rend  target
}

// openStage starts Redis under dir/redis-NAME, seeds games (named after
// prefix), starts the renderer (bin, or in-process when bin is empty) on
// dir/NAME.db and waits until it has consumed the seed.
func openStage(ctx context.Context, bin, dir, name, prefix string, games int) (st *stage, err error) {
	st = &stage{}
	defer func() {
		if err != nil {
			st.Close()
		}
	}()
	if st.redis, err = StartRedis(mkdir(dir, "redis-"+name)); err != nil {
		return nil, err
	}
	st.rdb = st.redis.Client(0)
	st.mint = event.NewMinter(time.Now().UnixNano())
	if st.games, err = SeedGames(ctx, st.rdb, st.mint, prefix, games); err != nil {
		return st, err
	}
	if st.rend, err = startTarget(ctx, bin, st.redis.URL(), filepath.Join(dir, name+".db"), prefix+"-1", dir); err != nil {
		return st, err
	}
	keys := Keys(st.games)
	_, err = WaitFor(ctx, 30*time.Second, "seed events consumed", func() (bool, error) {
		return Drained(ctx, st.rdb, "feed", keys)
	})
	return st, err
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
