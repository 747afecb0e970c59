package feed_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A command the server's ACL refuses to the consumer's user (a grant
// missing from docs/operations.md's rules: NOPERM) is Redis refusing, not
// a fault of the stream: the stream is not sent back through the group
// door (no XGROUP CREATE after the first), no group error is counted, and
// the refusal is logged at WARN or above, once a wait that doubles
// (claims held back, or the loop's backoff when nothing else answers).
// Ready names it when nothing else answers and stays ready when only
// claims are refused. Nothing is lost or doubled: once the grant is given
// (ACL SETUSER, no restart) every entry is handled once and nothing stays
// pending. Until 7 Dec 2026 a refused XAUTOCLAIM, XPENDING or XREADGROUP
// sent the stream to the door at every claim beat or turn, logged only at
// DEBUG, and a refused XACK was dropped as "nothing left to ack", so the
// entry was claimed back and handled again once XACK was granted.
func TestACLRefusalIsNoStreamFault(t *testing.T) {
	tests := []struct {
		missing string
		// held is the line said at each refusal, key its field of the
		// wait that follows, which doubles, jittered: the third wait is
		// at least third.
		held, key string
		third     time.Duration
	}{
		// Claims are held back, from ClaimEvery (100 ms) doubling; the
		// reads go on.
		{"xautoclaim", "the server's ACL refuses claims", "retry_in", 200 * time.Millisecond},
		// The ack is kept, and the loop backs off as it does for any
		// refusal of Redis, from 50 ms doubling.
		{"xack", "consumer loop error; backing off", "backoff", 100 * time.Millisecond},
		// The streams are set aside, and nothing else answering, the
		// loop backs off; Ready names the refusal.
		{"xreadgroup", "consumer loop error; backing off", "backoff", 100 * time.Millisecond},
		// The question before a claim (idleOf): claims held back.
		{"xpending", "the server's ACL refuses claims", "retry_in", 200 * time.Millisecond},
	}
	for _, tt := range tests {
		missing := tt.missing
		t.Run(missing, func(t *testing.T) {
			ctx := context.Background()
			srv, admin := mustStart(t)
			s := stream("acl" + missing)
			if err := admin.XGroupCreateMkStream(ctx, s, group, "0").Err(); err != nil {
				t.Fatal(err)
			}
			// Two entries a dead peer left pending: only XAUTOCLAIM
			// brings them back.
			dead := []string{add(t, admin, s), add(t, admin, s)}
			if err := admin.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "dead", Streams: []string{s, ">"}}).Err(); err != nil {
				t.Fatal(err)
			}
			user := userWithout(t, srv, admin, "-"+missing)
			var rec recorder
			cfg := baseConfig(t, user, "r1", s)
			logs := captureLogs(t, &cfg)
			cfg.Handler = rec.handler
			c := mustOpen(t, cfg)
			fresh := []string{add(t, admin, s), add(t, admin, s)}
			waitFor(t, 10*time.Second, "a first refusal", func() bool { return refusals(t, admin, "NOPERM") >= 1 })
			doors := commandCalls(t, admin)["xgroup|create"]
			waitFor(t, 10*time.Second, "refused for a while", func() bool { return refusals(t, admin, "NOPERM") >= 5 })
			if n := commandCalls(t, admin)["xgroup|create"] - doors; n != 0 {
				t.Errorf("%d XGROUP CREATE while %s was refused: the stream was sent to the group door", n, strings.ToUpper(missing))
			}
			if n := c.Stats().GroupErrors; n != 0 {
				t.Errorf("group errors %d, want 0", n)
			}
			if logs.count("NOPERM") == 0 {
				t.Errorf("no WARN or ERROR line says NOPERM")
			}
			waitFor(t, 10*time.Second, "three refusals said", func() bool { return len(waits(logs, tt.held, tt.key)) >= 3 })
			if w := waits(logs, tt.held, tt.key); slices.Max(w) < tt.third {
				t.Errorf("waits after the refusals %v: none reached %v, the refusal is retried at a fixed pace", w, tt.third)
			}
			if missing == "xautoclaim" {
				waitFor(t, 10*time.Second, "the fresh entries read while claims are refused", func() bool {
					return rec.count(fresh[0]) == 1 && rec.count(fresh[1]) == 1
				})
				if err := c.Ready(); err != nil {
					t.Errorf("Ready while only claims are refused: %v", err)
				}
			}
			if missing == "xreadgroup" {
				// Nothing else answers: past staleAfter, Ready says
				// "redis has not answered for …; it refuses: NOPERM …".
				waitFor(t, 15*time.Second, "Ready names the refusal", func() bool {
					err := c.Ready()
					return err != nil && strings.Contains(err.Error(), "NOPERM")
				})
			}
			if n := pending(t, admin, s); n == 0 {
				t.Errorf("nothing pending while %s is refused", strings.ToUpper(missing))
			}
			if err := admin.Do(ctx, "ACL", "SETUSER", "r", "+"+missing).Err(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 15*time.Second, "every entry handled and nothing pending once granted", func() bool {
				for _, id := range append(append([]string(nil), dead...), fresh...) {
					if rec.count(id) == 0 {
						return false
					}
				}
				return pending(t, admin, s) == 0
			})
			handledOnce(t, rec.ids(), len(dead)+len(fresh))
			waitFor(t, 5*time.Second, "ready", func() bool { return c.Ready() == nil })
		})
	}
}

// waits returns the durations of field key of the lines of logs that say
// line, in order.
func waits(logs *logBuffer, line, key string) []time.Duration {
	logs.mu.Lock()
	text := logs.b.String()
	logs.mu.Unlock()
	var out []time.Duration
	for l := range strings.Lines(text) {
		if !strings.Contains(l, line) {
			continue
		}
		_, v, ok := strings.Cut(l, " "+key+"=")
		if !ok {
			continue
		}
		v, _, _ = strings.Cut(strings.TrimSpace(v), " ")
		if d, err := time.ParseDuration(v); err == nil {
			out = append(out, d)
		}
	}
	return out
}
