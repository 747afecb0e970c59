package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
)

// SeedGames writes each game's first event (game_started) and registers the
// games, so that renderers discover them and the store knows them before
// websocket clients ask for them.
func SeedGames(ctx context.Context, rdb redis.UniversalClient, m *event.Minter, prefix string, n int) ([]string, error) {
	games := make([]string, n)
	for i := range n {
		games[i] = gamesim.GameName(prefix, i+1)
		first := gamesim.Play(games[i], gamesim.GameSeed(1, i+1), 1)
		if _, err := gamesim.Append(ctx, rdb, m, games[i], first...); err != nil {
			return nil, err
		}
	}
	return games, nil
}

// Keys returns the games' stream keys.
func Keys(games []string) []string {
	out := make([]string, len(games))
	for i, g := range games {
		out[i] = event.StreamKey(g)
	}
	return out
}

// markedChat is a chat entry whose text carries its send time.
func markedChat(m *event.Minter, now time.Time) []string {
	return []string{
		event.FieldID, m.Next(now), event.FieldKind, event.KindChat, event.FieldAt, gamesim.FormatAt(now),
		"player", "bench", "text", Marker + strconv.FormatInt(now.UnixNano(), 10),
	}
}

// WriteMarked writes marked chat lines at rate per second, round-robin over
// games, for d; entries that are due together go in one pipeline, each
// stamped with the time just before it is sent. It returns how many it
// wrote.
func WriteMarked(ctx context.Context, rdb redis.UniversalClient, m *event.Minter, games []string, rate float64, d time.Duration) (int, error) {
	start := time.Now()
	total := int(rate * d.Seconds())
	sent := 0
	for sent < total {
		due := int(time.Since(start).Seconds()*rate) + 1
		if due > total {
			due = total
		}
		if due <= sent {
			next := start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))
			select {
			case <-ctx.Done():
				return sent, ctx.Err()
			case <-time.After(time.Until(next)):
			}
			continue
		}
		pipe := rdb.Pipeline()
		now := time.Now()
		for i := sent; i < due; i++ {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: event.StreamKey(games[i%len(games)]), Values: markedChat(m, now)})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return sent, fmt.Errorf("bench: xadd: %w", err)
		}
		sent = due
	}
	return sent, nil
}

// Broadcast writes one marked line to every game in one pipeline and
// returns its send time.
func Broadcast(ctx context.Context, rdb redis.UniversalClient, m *event.Minter, games []string) (int64, error) {
	pipe := rdb.Pipeline()
	now := time.Now()
	for _, g := range games {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: event.StreamKey(g), Values: markedChat(m, now)})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("bench: xadd: %w", err)
	}
	return now.UnixNano(), nil
}

// PendingOf returns the number of entries consumer holds pending over keys
// in group (XPENDING summary per stream, pipelined).
func PendingOf(ctx context.Context, rdb redis.UniversalClient, group, consumer string, keys []string) (int64, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.XPendingCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.XPending(ctx, k, group)
	}
	_, _ = pipe.Exec(ctx) // each command's error is looked at below
	var n int64
	for _, c := range cmds {
		p, err := c.Result()
		if err != nil && strings.HasPrefix(err.Error(), "NOGROUP") {
			continue // not consumed yet: nothing pending
		}
		if err != nil {
			return 0, fmt.Errorf("bench: xpending: %w", err)
		}
		n += p.Consumers[consumer]
	}
	return n, nil
}

// Drained reports whether group has read every entry of keys and holds
// none pending.
func Drained(ctx context.Context, rdb redis.UniversalClient, group string, keys []string) (bool, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.XInfoGroupsCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.XInfoGroups(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	for _, c := range cmds {
		gs, err := c.Result()
		if err != nil {
			return false, nil // no stream or group yet
		}
		found := false
		for _, g := range gs {
			if g.Name == group {
				found = true
				if g.Pending != 0 || g.Lag != 0 {
					return false, nil
				}
			}
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}

// WaitFor polls cond every 5ms until it is true, fails, or timeout passes;
// it returns how long it took.
func WaitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) (time.Duration, error) {
	start := time.Now()
	for {
		ok, err := cond()
		if err != nil {
			return time.Since(start), err
		}
		if ok {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return time.Since(start), fmt.Errorf("%w after %v: %s", errTimeout, timeout, what)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
