package renderer

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/logsample"
)

// TestRedisLogSampledApart: within one sampling period, after a failed
// dial is logged, another failed dial is held back, but an ACL's refusal
// and a Sentinel's new master are each logged: they say what to grant and
// that a failover happened, which an outage's dials must not hide.
func TestRedisLogSampledApart(t *testing.T) {
	var buf bytes.Buffer
	l := redisLog{log: slog.New(slog.NewTextHandler(&buf, nil)), sample: logsample.New(time.Hour)}
	ctx := context.Background()
	lines := []struct {
		said   string
		logged bool
	}{
		{"redis: 2026/12/07 dial tcp 127.0.0.1:7000: connect: connection refused", true},
		{"redis: 2026/12/07 dial tcp 127.0.0.1:7000: connect: connection refused again", false},
		{`sentinel: new master="feed" addr="127.0.0.1:7001"`, true},
		{"redis: the server's ACL refuses XADD to this user: grant it", true},
		{`sentinel: GetMasterAddrByName name="feed" failed: EOF`, false},
	}
	for _, ln := range lines {
		before := buf.Len()
		l.Printf(ctx, "%s", ln.said)
		said := strings.TrimPrefix(ln.said, "redis: ")
		got := buf.Len() > before && strings.Contains(buf.String()[before:], said[:20])
		if got != ln.logged {
			t.Errorf("%q logged = %v, want %v\n%s", ln.said, got, ln.logged, buf.String())
		}
	}
}
