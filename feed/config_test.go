package feed_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
)

// TestOpenRefusesBadConfig: Open names what is wrong with a config before
// it touches Redis (the client here points at a closed port), and wraps
// ErrConfig.
func TestOpenRefusesBadConfig(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	handler := func(context.Context, feed.Message) error { return nil }
	batch := func(_ context.Context, ms []feed.Message) []error { return make([]error, len(ms)) }
	prepare := func(context.Context, []feed.Message) func(context.Context) []error { return nil }
	valid := func() feed.Config {
		return feed.Config{Client: rdb, Group: "g", Consumer: "c", Streams: feed.StaticStreams("s"), Handler: handler}
	}
	tests := []struct {
		name   string
		change func(*feed.Config)
		says   string
	}{
		{"no client", func(c *feed.Config) { c.Client = nil }, "Client is nil"},
		{"no group", func(c *feed.Config) { c.Group = "" }, "Group is empty"},
		{"no consumer", func(c *feed.Config) { c.Consumer = "" }, "Consumer is empty"},
		{"neither streams nor registry", func(c *feed.Config) { c.Streams = nil }, "exactly one of Registry and Streams"},
		{"both streams and registry", func(c *feed.Config) { c.Registry = "codemojex:games" }, "exactly one of Registry and Streams"},
		{"no handler", func(c *feed.Config) { c.Handler = nil }, "exactly one of Handler and BatchHandler"},
		{"two handlers", func(c *feed.Config) { c.BatchHandler = batch }, "exactly one of Handler and BatchHandler"},
		{"prepare without a batch handler", func(c *feed.Config) { c.Prepare = prepare }, "Prepare needs BatchHandler"},
		{"lease too short", func(c *feed.Config) { c.LeaseTTL = 10 * time.Millisecond }, "LeaseTTL 10ms is under 30ms"},
		{"negative linger", func(c *feed.Config) { c.Linger = -time.Millisecond }, "Linger -1ms"},
		{"linger over a second", func(c *feed.Config) { c.Linger = 2 * time.Second }, "Linger 2s"},
		{"min idle too short", func(c *feed.Config) { c.MinIdle = time.Millisecond }, "MinIdle 1ms is under 2ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid()
			tt.change(&cfg)
			c, err := feed.Open(context.Background(), cfg)
			if err == nil {
				c.Close()
				t.Fatalf("Open accepted the config")
			}
			if !errors.Is(err, feed.ErrConfig) {
				t.Errorf("err = %v, want it to wrap ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("err = %q, want it to say %q", err, tt.says)
			}
		})
	}
}
