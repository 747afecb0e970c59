package renderer

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/codemojex/feed/internal/logsample"
	"github.com/codemojex/feed/internal/redisconn"
)

// redisLog writes go-redis's own lines (a failed dial, a bad connection
// dropped) through the renderer's logger, as every line a renderer writes
// is (docs/operations.md, "Logs"): left alone, go-redis writes them to
// stderr in the log package's format, whatever -log-level says.
type redisLog struct {
	log    *slog.Logger
	sample *logsample.Sampler
}

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	if !l.log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	said := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	key := sampleKey(said)
	ok, skipped := l.sample.Allow(key)
	if !ok {
		return
	}
	l.log.Warn("redis client", "err", said, "similar_unlogged", skipped)
}

// sampleKey is the sampler's key of a go-redis line. Two kinds are
// sampled apart from the rest, so that an outage's failed dials, one
// every 10 s, do not hide the one line that says what happened: an ACL's
// refusal, which says what to grant, and a Sentinel's announcement of a
// new master ("sentinel: new master=…"), which says that a failover
// happened and where the renderer now writes. Until 7 Dec 2026 the
// failover's line, which comes just after the dials to the dead master
// failed, was held back with them.
func sampleKey(said string) string {
	switch {
	case strings.Contains(said, redisconn.ACLRefusal):
		return "redis acl"
	case strings.HasPrefix(said, "sentinel: new master="):
		return "redis sentinel"
	}
	return "redis"
}

// routeRedisLogs sends go-redis's lines, and the refusals of the server's
// ACL (redisconn.SetLogger), to log. go-redis has one logger per
// process: in a process that runs several replicas (tests, feedbench
// -inproc) the last one started names them.
func routeRedisLogs(log *slog.Logger) {
	redisconn.SetLogger(redisLog{log: log, sample: logsample.New(redisconn.LogEvery)})
}
