package feed_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// untaggedDead is a DeadKey that drops the stream key's hash tag.
func untaggedDead(s string) string { return strings.NewReplacer("{", "", "}", "").Replace(s) + ":dead" }

// TestClusterOpenRefusesDeadKeysInAnotherSlot: on a cluster, Open refuses a
// stream whose dead-letter stream or dead positions set is in another hash
// slot, saying so. The default dead key of a key without a hash tag is
// key+":dead", in another slot: the consumer read the stream, and its first
// poison entry failed CROSSSLOT at every attempt, for good. Tagged keys (the
// binaries' codemojex:{GAME}:events, a registry's streams) open as before,
// and on a single node an untagged key still does.
func TestClusterOpenRefusesDeadKeysInAnotherSlot(t *testing.T) {
	rc := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1})
	rdb := rc.Client(t)
	handler := func(context.Context, feed.Message) error { return nil }
	for _, tc := range []struct {
		name    string
		streams []string // static list; none: the registry
		deadKey func(string) string
		refused bool
	}{
		{name: "untagged stream, default dead key", streams: []string{stream("g0"), "plain:events"}, refused: true},
		{name: "tagged streams", streams: []string{stream("g0"), "app:{x}:events"}},
		{name: "registry, default dead key"},
		{name: "registry, dead key in another slot", deadKey: untaggedDead, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(t, rdb, "r1", tc.streams...)
			if len(tc.streams) == 0 {
				cfg.Streams, cfg.Registry = nil, event.RegistryKey
			}
			cfg.DeadKey = tc.deadKey
			cfg.Handler = handler
			c, err := feed.Open(context.Background(), cfg)
			if err == nil {
				c.Close()
			}
			if !tc.refused {
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				return
			}
			if !errors.Is(err, feed.ErrConfig) || !strings.Contains(err.Error(), "must share a hash slot") {
				t.Fatalf("open: %v; want ErrConfig saying the stream and its dead keys must share a hash slot", err)
			}
		})
	}
	t.Run("untagged stream listed after open", func(t *testing.T) {
		var later atomic.Bool
		cfg := baseConfig(t, rdb, "r2")
		cfg.Streams = func(context.Context) ([]string, error) {
			if later.Load() {
				return []string{stream("g0"), "plain:events"}, nil
			}
			return []string{stream("g0")}, nil
		}
		logs := captureLogs(t, &cfg)
		cfg.Handler = handler
		c := mustOpen(t, cfg)
		later.Store(true)
		waitFor(t, 10*time.Second, "the untagged stream refused", func() bool {
			return logs.count("stream not read: its dead keys are in another hash slot") > 0
		})
		// Known is counted by the turn after the listing.
		waitFor(t, 10*time.Second, "one stream known: the untagged one not read", func() bool { return c.Stats().Known == 1 })
	})
	t.Run("single node", func(t *testing.T) {
		_, one := mustStart(t)
		cfg := baseConfig(t, one, "r1", "plain:events")
		cfg.Handler = handler
		mustOpen(t, cfg)
	})
}
