package feed

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// cleanupScript removes the group's consumers that have no pending entry
// and have been idle past ARGV[2] ms, except the caller. Checked and
// deleted in one script, so no pending entry is ever dropped with its
// consumer (XGROUP DELCONSUMER discards the consumer's pending entries).
var cleanupScript = redis.NewScript(`
local n = 0
local cs = redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])
for _, c in ipairs(cs) do
  local f = {}
  for i = 1, #c, 2 do f[c[i]] = c[i + 1] end
  if f['name'] ~= ARGV[3] and f['pending'] == 0 and f['idle'] > tonumber(ARGV[2]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], f['name'])
    n = n + 1
  end
end
return n
`)

// census sets the pending and lag gauges of every open stream and removes
// idle consumers, in one pipeline.
func (c *Consumer) census() error {
	act := c.active()
	if len(act) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	pipe := c.rdb.Pipeline()
	groups := make([]*redis.XInfoGroupsCmd, len(act))
	cleans := make([]*redis.Cmd, len(act))
	for i, st := range act {
		groups[i] = pipe.XInfoGroups(ctx, st.key)
		cleans[i] = cleanupScript.Eval(ctx, pipe, []string{st.key},
			c.cfg.Group, c.cfg.ConsumerMaxIdle.Milliseconds(), c.cfg.Consumer)
	}
	_, _ = pipe.Exec(ctx)
	for i, st := range act {
		if err := groups[i].Err(); err != nil {
			c.fail("census", err)
			if !serverError(err) {
				return err
			}
			c.reopen(st, err)
			continue
		}
		game := gameOf(st.key)
		if game == "" {
			game = st.key
		}
		for _, g := range groups[i].Val() {
			if g.Name == c.cfg.Group {
				mPending.WithLabelValues(game).Set(float64(g.Pending))
				mLag.WithLabelValues(game).Set(float64(g.Lag))
			}
		}
		n, err := cleans[i].Int64()
		if err != nil {
			c.fail("cleanup", err)
			c.log.Warn("idle consumer cleanup failed", "stream", st.key, "err", err)
			continue
		}
		if n > 0 {
			c.stats.consumersDeleted.Add(n)
			mConsumersDeleted.Add(float64(n))
			c.log.Info("idle consumers removed", "stream", st.key, "game", game, "count", n,
				"idle_over", c.cfg.ConsumerMaxIdle)
		}
	}
	c.ok()
	return nil
}
