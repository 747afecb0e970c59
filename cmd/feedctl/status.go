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

func (g *global) status(ctx context.Context, args []string, stdout io.Writer) error {
	defer g.rdb.Close()
	fs := flagenv.New("status")
	if err := fs.Parse(args); err != nil {
		return err
	}
	games, err := g.games(ctx)
	if err != nil {
		return err
	}
	streams := make([]string, len(games))
	for i, game := range games {
		streams[i] = event.StreamKey(game)
	}
	st, err := feed.Inspect(ctx, g.rdb, g.group, streams, event.DeadKeyOf)
	if err != nil {
		return err
	}
	writeStatus(stdout, st)
	return nil
}

func writeStatus(w io.Writer, st feed.Status) {
	rs := make([]string, len(st.Renderers))
	for i, r := range st.Renderers {
		rs[i] = untrusted.Escape(r)
	}
	fmt.Fprintf(w, "group %s  renderers alive: %s\n\n", untrusted.Escape(st.Group), strings.Join(rs, ", "))
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
