package redisconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

func openCluster(rawURL string, files *tlsFiles) (*redis.ClusterClient, error) {
	opt, err := parseCluster(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redisconn: %w", redactErr(err))
	}
	files.apply(opt.TLSConfig, &opt.Dialer, opt.DialTimeout)
	opt.ContextTimeoutEnabled = true
	opt.DisableIdentity = true
	if u, _ := url.Parse(rawURL); !u.Query().Has("pool_size") {
		opt.PoolSize = poolSize()
	}
	cc := redis.NewClusterClient(opt)
	cc.AddHook(&reloader{cc: cc})
	cc.AddHook(aclHook{})
	return cc, nil
}

// parseCluster is go-redis's ParseClusterURL that also takes the
// skip_verify parameter of its ParseURL, so a URL that a single node
// takes works for a cluster too (the probe of a plain URL passed it, and
// the cluster client refused it: "unexpected option: skip_verify").
// go-redis verifies every node's certificate against the first host of
// the URL (its ServerName); that host being an IP address, each node's is
// verified against the address it is dialled at: a node announced as
// 10.0.0.2 cannot present a certificate for 10.0.0.1. Until 7 Dec 2026
// every node had to.
func parseCluster(rawURL string) (*redis.ClusterOptions, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	skip, hasSkip := q.Get("skip_verify"), q.Has("skip_verify")
	if hasSkip {
		q.Del("skip_verify")
		u.RawQuery = q.Encode()
	}
	opt, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, err
	}
	if opt.TLSConfig != nil {
		opt.TLSConfig.MinVersion = tls.VersionTLS12
		if net.ParseIP(opt.TLSConfig.ServerName) != nil {
			opt.TLSConfig.ServerName = ""
		}
		if hasSkip {
			if opt.TLSConfig.InsecureSkipVerify, err = strconv.ParseBool(skip); err != nil {
				return nil, fmt.Errorf("skip_verify=%q: want true or false", skip)
			}
		}
	}
	return opt, nil
}

// isCluster asks the server at opt whether it runs in cluster mode, within
// ctx and ProbeTimeout. The question is CLUSTER SLOTS, which a cluster
// client sends anyway to load its slot map, so a least-privilege ACL user
// needs no more than that (INFO, the question until 7 Dec 2026, is in
// @dangerous): a cluster node answers it, a server without cluster support
// answers an error that says so, which is no error here.
func isCluster(ctx context.Context, opt *redis.Options) (bool, error) {
	c := probeClient(opt, 0) // a cluster node refuses SELECT
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	err := c.ClusterSlots(ctx).Err()
	if err != nil && strings.Contains(err.Error(), "cluster support disabled") {
		return false, nil
	}
	return err == nil, err
}

// reloader is a hook that reloads a cluster client's slot map, in the
// background and at most once per reloadEvery, after a command fails in a
// way that says the map is stale.
type reloader struct {
	cc      *redis.ClusterClient
	running atomic.Bool
	last    atomic.Int64 // unix ns of the last reload
}

const reloadEvery = 100 * time.Millisecond

func (r *reloader) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *reloader) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if stale(err) {
			r.reload()
		}
		return err
	}
}

func (r *reloader) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if stale(c.Err()) {
				r.reload()
				break
			}
		}
		return err
	}
}

func (r *reloader) reload() {
	if time.Since(time.Unix(0, r.last.Load())) < reloadEvery || !r.running.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer r.running.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r.cc.ReloadState(ctx)
		r.last.Store(time.Now().UnixNano())
	}()
}

// stale reports whether err says the client's slot map may be stale: a
// node that cannot be reached or closed the connection, or a cluster
// error. A context's end or a plain server error is not.
func stale(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && !ne.Timeout() {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	if errors.Is(err, redis.ErrClosed) {
		return false
	}
	if s := err.Error(); strings.Contains(s, "EOF") || strings.Contains(s, "connection reset") {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		code, _, _ := strings.Cut(re.Error(), " ")
		switch code {
		case "MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN", "UNBLOCKED", "READONLY", "LOADING", "MASTERDOWN":
			return true
		}
	}
	return false
}
