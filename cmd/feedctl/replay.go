package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/flagenv"
	"github.com/codemojex/feed/internal/untrusted"
)

// replay moves the group's last-delivered id of a game's stream back to the
// start, so the renderers re-deliver everything retained. The store's
// idempotence makes this a re-render that changes nothing.
func (g *global) replay(ctx context.Context, args []string, t terminal, stdout io.Writer) error {
	var game string
	var c care
	fs := flagenv.New("replay")
	fs.SetOutput(t.out)
	fs.StringVar(&game, "game", "", "game to replay")
	c.flags(fs)
	if err := gameArg(fs, args, &game); err != nil {
		return err
	}
	if err := g.open(ctx); err != nil {
		return err
	}
	defer g.rdb.Close()
	key := event.StreamKey(game)
	if err := g.replayable(ctx, game, key); err != nil {
		return err
	}
	n, err := g.rdb.XLen(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("replay %s: %w", game, err)
	}
	what := fmt.Sprintf("rewind group %s on %s and re-deliver its %d retained entries", untrusted.Escape(g.group), game, n)
	if c.dryRun {
		fmt.Fprintf(stdout, "dry run: would %s\n", what)
		return nil
	}
	if err := c.confirm(t, what); err != nil {
		return err
	}
	// No ENTRIESREAD: the server then counts the group's reads from the
	// stream's first retained entry, so its lag is the retained length and
	// comes back to 0 once they are read. ENTRIESREAD 0 counted the entries
	// a writer had trimmed (MAXLEN) as unread for good: the lag stayed at
	// that number after the re-delivery, in status and in the renderers'
	// census, which then marked the game due at every beat
	// (TestReplayTrimmedLagSettles).
	if err := g.rdb.Do(ctx, "XGROUP", "SETID", key, g.group, "0").Err(); err != nil {
		return fmt.Errorf("replay %s: %w", game, err)
	}
	// Renderers read a quiet game when its registry score moves, and a
	// game pruned from the registry never: move it as a writer does, or
	// the rewound stream waits for the poll, or for good.
	if err := wakeGame(ctx, g.rdb, game); err != nil {
		return fmt.Errorf("replay %s: group rewound, but the renderers may not see it before their poll: %w", game, err)
	}
	fmt.Fprintf(stdout, "replaying %s: %d retained entries re-delivered to group %s\n", game, n, untrusted.Escape(g.group))
	return nil
}

// replayable returns an error saying why the group cannot be rewound on a
// game's stream: the stream does not exist (a mistyped game, or one pruned
// with -streams), or the group does not read it (a mistyped -group, or
// renderers that have not found the game yet). It is asked before
// -dry-run answers, so that a dry run does not promise a replay the run
// would refuse, and the run says what is wrong instead of Redis's NOGROUP,
// or its advice to create the key with MKSTREAM.
func (g *global) replayable(ctx context.Context, game, key string) error {
	groups, err := g.rdb.XInfoGroups(ctx, key).Result()
	if err != nil {
		if noSuchKey(err) {
			return fmt.Errorf("replay %s: no stream %s: no such game, or its streams were pruned", game, key)
		}
		return fmt.Errorf("replay %s: %w", game, err)
	}
	names := make([]string, len(groups))
	for i, gr := range groups {
		if gr.Name == g.group {
			return nil
		}
		names[i] = gr.Name
	}
	if len(names) == 0 {
		return fmt.Errorf("replay %s: no group reads %s yet: nothing to replay", game, key)
	}
	return fmt.Errorf("replay %s: no group %s on %s (groups: %s); the renderers' -group?",
		game, untrusted.Escape(g.group), key, untrusted.Escape(strings.Join(names, ", ")))
}

// noSuchKey reports whether err is Redis's answer to XINFO on a key that
// does not exist, which go-redis gives as text only.
func noSuchKey(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such key")
}
