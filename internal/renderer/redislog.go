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
	// An ACL's refusal is sampled apart: an outage's failed dials must
	// not hide the one line that says what to grant.
	key := "redis"
	if strings.Contains(said, redisconn.ACLRefusal) {
		key = "redis acl"
	}
	ok, skipped := l.sample.Allow(key)
	if !ok {
		return
	}
	l.log.Warn("redis client", "err", said, "similar_unlogged", skipped)
}

// routeRedisLogs sends go-redis's lines, and the refusals of the server's
// ACL (redisconn.SetLogger), to log. go-redis has one logger per
// process: in a process that runs several replicas (tests, feedbench
// -inproc) the last one started names them.
func routeRedisLogs(log *slog.Logger) {
	redisconn.SetLogger(redisLog{log: log, sample: logsample.New(redisconn.LogEvery)})
}
