package redisconn

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/codemojex/feed/internal/logsample"
)

// LogEvery bounds the go-redis lines LogTo writes: through an outage
// go-redis reports every failed dial, several a second, beside the
// command's own error that already says what failed.
const LogEvery = 10 * time.Second

// LogTo sends go-redis's own log lines (a failed dial, a bad connection
// dropped), and the refusals of the server's ACL (SetLogger), to w as
// "PREFIX: redis: …" lines, at most one every LogEvery with how many were
// left out (the ACL's apart from the rest), where go-redis wrote each of
// them to stderr in the log package's format. For the command-line tools; the
// renderer routes them through its logger instead. go-redis has one
// logger per process: the last call wins.
func LogTo(w io.Writer, prefix string) {
	SetLogger(&lineLog{w: w, prefix: prefix, sample: logsample.New(LogEvery)})
}

type lineLog struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	sample *logsample.Sampler
}

func (l *lineLog) Printf(_ context.Context, format string, v ...any) {
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	key := "redis"
	if strings.Contains(msg, ACLRefusal) {
		key = "redis acl" // an outage's failed dials must not hide it
	}
	ok, skipped := l.sample.Allow(key)
	if !ok {
		return
	}
	msg = strings.ReplaceAll(msg, "\n", " ")
	if skipped > 0 {
		msg += fmt.Sprintf(" (%d similar not shown)", skipped)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s: redis: %s\n", l.prefix, msg)
}
