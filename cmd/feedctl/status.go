package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/flagenv"
	"github.com/codemojex/feed/internal/untrusted"
)

// status prints the group's health over the games with a reason to be
// looked at: the -recent most recently active games (feed.StatusStreams),
// so that its cost follows activity, not the registry. -all inspects every
// registered game instead (feed.Inspect pages it): five commands per
// game.
func (g *global) status(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flagenv.New("status")
	fs.SetOutput(stderr)
	var recent int64
	var all bool
	fs.Int64Var(&recent, "recent", 200, "show the games with the most recent events, this many")
	fs.BoolVar(&all, "all", false, "inspect every registered game (costly on a large registry)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if recent < 1 {
		return fmt.Errorf("-recent %d: want at least 1", recent)
	}
	if err := g.open(ctx); err != nil {
		return err
	}
	defer g.rdb.Close()
	var streams []string
	var games int64
	if all {
		names, err := g.games(ctx)
		if err != nil {
			return err
		}
		streams = make([]string, len(names))
		for i, game := range names {
			streams[i] = event.StreamKey(game)
		}
		games = int64(len(names))
	} else {
		var err error
		if streams, games, err = feed.StatusStreams(ctx, g.rdb, recent, nil); err != nil {
			return err
		}
	}
	st, err := feed.Inspect(ctx, g.rdb, g.group, streams, event.DeadKeyOf)
	if err != nil {
		return err
	}
	st.Games = games
	writeStatus(stdout, st, all)
	return nil
}

func writeStatus(w io.Writer, st feed.Status, all bool) {
	rs := make([]string, len(st.Renderers))
	for i, r := range st.Renderers {
		rs[i] = untrusted.Escape(r)
	}
	alive := strings.Join(rs, ", ")
	if alive == "" {
		alive = "none"
	}
	fmt.Fprintf(w, "group %s  renderers alive: %s\n", untrusted.Escape(st.Group), alive)
	if all || int64(len(st.Streams)) >= st.Games {
		fmt.Fprintf(w, "games: %d of %d\n\n", len(st.Streams), st.Games)
	} else {
		fmt.Fprintf(w, "games: the %d most recent of %d (-all: every game; a renderer's /status adds its read set)\n\n", len(st.Streams), st.Games)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GAME\tLENGTH\tLAG\tPENDING\tOLDEST IDLE\tDEAD\tCONSUMERS\tERROR")
	for _, s := range st.Streams {
		var cs []string
		for _, c := range s.Consumers {
			alive := ""
			if !c.Alive {
				alive = " (no lease)"
			}
			cs = append(cs, fmt.Sprintf("%s:%d/%s%s", untrusted.Escape(c.Name), c.Pending, c.Idle.Round(time.Second), alive))
		}
		name := s.Game
		if name == "" {
			name = s.Stream
		}
		lag := fmt.Sprint(s.Lag)
		if s.Lag < 0 {
			lag = "?"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%d\t%s\t%s\n", untrusted.Escape(name), s.Length, lag, s.Pending,
			s.OldestPendingIdle.Round(time.Millisecond), s.Dead, strings.Join(cs, " "), untrusted.Text(s.Err))
	}
	tw.Flush()
}
