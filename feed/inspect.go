package feed

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
)

// Inspect reports the health of group over streams: per stream its length,
// lag, pending count and oldest pending entry's idle time, dead letters and
// consumers; and which consumer names hold a live lease. A stream's own
// failure (WRONGTYPE, no group yet) is shown in its Err and the others are
// still reported, and so, on a cluster, is a stream whose node does not
// answer; the error is for Redis being unreachable (on a cluster: no
// stream's node answered, or the master of the leases did not). deadKey
// nil means event.DeadKeyOf.
func Inspect(ctx context.Context, rdb redis.UniversalClient, group string, streams []string, deadKey func(string) string) (Status, error) {
	if deadKey == nil {
		deadKey = event.DeadKeyOf
	}
	st := Status{Group: group, At: time.Now().UTC(), Streams: make([]StreamStatus, len(streams))}
	_, cluster := rdb.(*redis.ClusterClient)
	// The leases are read beside the streams: on a cluster each waits for
	// a hung master up to nodeTimeout, once, not one after the other.
	var (
		live    []string
		leasErr error
		leases  = make(chan struct{})
	)
	go func() {
		defer close(leases)
		live, leasErr = liveLeases(ctx, rdb, group)
	}()
	type cmds struct {
		xlen   *redis.IntCmd
		groups *redis.XInfoGroupsCmd
		cons   *redis.XInfoConsumersCmd
		oldest *redis.XPendingExtCmd
		dead   *redis.IntCmd
	}
	cs := make([]cmds, len(streams))
	// One pipeline per page of maxKeys streams: a status over a whole
	// registry (feedctl status -all) never has Redis buffer every reply for
	// one client at once. On a cluster each page is one pipeline per
	// master, sent concurrently within nodeTimeout (nodePipes): go-redis's
	// cluster pipeline waited for a hung master (SIGSTOPped, partitioned)
	// until ctx ended and then failed every node's replies with its own
	// (TestClusterInspectHungMaster).
	for lo := 0; lo < len(streams); lo += maxKeys {
		p := newNodePipes(ctx, rdb)
		for i := lo; i < min(lo+maxKeys, len(streams)); i++ {
			key := streams[i]
			pipe := p.of(key)
			cs[i] = cmds{
				xlen:   pipe.XLen(ctx, key),
				groups: pipe.XInfoGroups(ctx, key),
				cons:   pipe.XInfoConsumers(ctx, key, group),
				oldest: pipe.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: key, Group: group, Start: "-", End: "+", Count: 1}),
				dead:   p.of(deadKey(key)).XLen(ctx, deadKey(key)),
			}
		}
		p.exec(ctx)
		if !cluster {
			if err := cs[lo].xlen.Err(); err != nil && !serverError(err) && !isNil(err) {
				<-leases
				return st, fmt.Errorf("feed: inspect: %w", err)
			}
		}
	}
	<-leases
	if leasErr != nil {
		return st, fmt.Errorf("feed: inspect: %w", leasErr)
	}
	st.Renderers = live
	alive := map[string]bool{}
	for _, n := range live {
		alive[n] = true
	}
	// On a cluster, a stream whose node does not answer (a master down,
	// before its replica takes over) shows the error in its own row and
	// the others are reported; only when no stream answered is the error
	// Inspect's. Until 5 Dec 2026 one master down of three failed the
	// whole status (/status, /api/status, feedctl status) for as long as
	// it was down, while the renderers read the other masters' games on
	// (TestClusterInspectDeadMaster).
	var unreachable error
	answered := len(streams) == 0
	for i := range streams {
		c := cs[i]
		if err := c.xlen.Err(); err != nil && !serverError(err) && !isNil(err) {
			unreachable = err
		} else {
			answered = true
		}
	}
	if !answered {
		return st, fmt.Errorf("feed: inspect: %w", unreachable)
	}
	for i, key := range streams {
		ss := StreamStatus{Stream: key, Game: gameOf(key), Lag: -1}
		c := cs[i]
		ss.Length = c.xlen.Val()
		ss.Dead = c.dead.Val()
		var errs []string
		for _, e := range []error{c.xlen.Err(), c.groups.Err(), c.dead.Err()} {
			if e != nil && !isNil(e) {
				errs = append(errs, e.Error())
			}
		}
		found := false
		for _, g := range c.groups.Val() {
			if g.Name == group {
				found = true
				ss.Pending, ss.Lag = g.Pending, g.Lag
			}
		}
		if !found && c.groups.Err() == nil {
			errs = append(errs, fmt.Sprintf("no consumer group %q", group))
		}
		if p := c.oldest.Val(); len(p) > 0 {
			ss.OldestPendingIdle = p[0].Idle
		}
		for _, cn := range c.cons.Val() {
			ss.Consumers = append(ss.Consumers, ConsumerStatus{
				Name: cn.Name, Pending: cn.Pending, Idle: cn.Idle, Alive: alive[cn.Name],
			})
		}
		if len(errs) > 0 {
			ss.Err = dedupe(errs)
		}
		st.Streams[i] = ss
	}
	return st, nil
}

func dedupe(errs []string) string {
	seen := map[string]bool{}
	var out []string
	for _, e := range errs {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return strings.Join(out, "; ")
}

// StatusStreams returns the streams a status page shows when the registry
// is large: the n most recently active games of the registry, then the
// extra keys (a consumer's Working set: games with pending entries or
// being read), without repeats; and the number of games in the registry.
// Its cost follows n and the read set, not the registry.
func StatusStreams(ctx context.Context, rdb redis.UniversalClient, n int64, extra []string) ([]string, int64, error) {
	pipe := rdb.Pipeline()
	recent := pipe.ZRevRange(ctx, event.RegistryKey, 0, n-1)
	total := pipe.ZCard(ctx, event.RegistryKey)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("feed: status streams: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, g := range recent.Val() {
		if k := event.StreamKey(g); event.ValidGame(g) && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, k := range extra {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out, total.Val(), nil
}

// liveLeases lists the consumer names of group holding a lease: the names
// in the group's index of leases (event.LeasesKey, which the lease scripts
// write) whose lease key exists. Its cost follows the group's renderers,
// not the keyspace: it SCANned the whole keyspace for the lease keys, 2
// SCAN calls at 200 games and 202 at 20,200, for a page refreshed every
// 2 s (TestLiveLeasesCostFollowsRenderers). The lease key, not the index,
// says whether a lease lives: the index may still hold a name whose lease
// expired (the scripts prune it only when they run) or was deleted by
// hand. A renderer that does not index its lease (before 6 Dec 2026) is
// not listed.
//
// On a cluster the index and the lease keys share the {GROUP} hash tag:
// one slot, whose master alone is asked, so another master hung or down
// does not hold the status (TestClusterInspectHungMaster,
// TestClusterInspectDeadMaster). The SCAN of the other masters, for a slot
// that migrates, is gone: the keys are now read by name, and the cluster
// client follows a migrating slot's MOVED and ASK replies to each key.
func liveLeases(ctx context.Context, rdb redis.UniversalClient, group string) ([]string, error) {
	names, err := rdb.ZRange(ctx, event.LeasesKey(group), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("leases of %s: %w", group, err)
	}
	if len(names) == 0 {
		return nil, nil
	}
	// One EXISTS per name in one round trip, not one MGET: during a slot's
	// migration a multi-key command fails (TRYAGAIN) while its keys are
	// split between the two masters, and each EXISTS is redirected alone.
	pipe := rdb.Pipeline()
	exists := make([]*redis.IntCmd, len(names))
	for i, n := range names {
		exists[i] = pipe.Exists(ctx, event.LeaseKey(group, n))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("leases of %s: %w", group, err)
	}
	live := names[:0]
	for i, n := range names {
		if exists[i].Val() == 1 {
			live = append(live, n)
		}
	}
	sort.Strings(live)
	return live, nil
}
