package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/flagenv"
)

// setFlags collects repeated -set field=value flags.
type setFlags map[string]string

func (s setFlags) String() string { return fmt.Sprint(map[string]string(s)) }

func (s setFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want field=value, got %q", v)
	}
	if strings.HasPrefix(k, "dead_") {
		return fmt.Errorf("field %q is the dead letter's own", k)
	}
	s[k] = val
	return nil
}

func (g *global) dead(ctx context.Context, args []string, stdout io.Writer) error {
	defer g.rdb.Close()
	if len(args) == 0 {
		return errors.New("dead: want list, requeue or drop")
	}
	sub, args := args[0], args[1:]
	var game, id string
	var all bool
	var limit int64
	set := setFlags{}
	fs := flagenv.New("dead " + sub)
	fs.StringVar(&game, "game", "", "game")
	switch sub {
	case "list":
		fs.Int64Var(&limit, "n", 100, "how many, oldest first (0: all)")
	case "requeue", "drop":
		fs.StringVar(&id, "id", "", "dead letter id (its position in the dead-letter stream)")
		fs.BoolVar(&all, "all", false, "every dead letter of the game")
		if sub == "requeue" {
			fs.Var(set, "set", "field=value to fix before requeueing (repeatable; needs -id)")
		}
	default:
		return fmt.Errorf("dead: unknown subcommand %q: want list, requeue or drop", sub)
	}
	if err := gameArg(fs, args, &game); err != nil {
		return err
	}
	stream, deadKey := event.StreamKey(game), event.DeadKey(game)
	if sub == "list" {
		ds, err := feed.ListDead(ctx, g.rdb, deadKey, limit)
		if err != nil {
			return err
		}
		writeDead(stdout, ds)
		return nil
	}
	if (id == "") == !all {
		return fmt.Errorf("dead %s: give exactly one of -id and -all", sub)
	}
	if len(set) > 0 && all {
		return fmt.Errorf("dead requeue: -set needs -id")
	}
	ids := []string{id}
	if all {
		ds, err := feed.ListDead(ctx, g.rdb, deadKey, 0)
		if err != nil {
			return err
		}
		ids = ids[:0]
		for _, d := range ds {
			ids = append(ids, d.DeadID)
		}
	}
	for _, id := range ids {
		switch {
		case sub == "drop":
			if err := feed.DropDead(ctx, g.rdb, deadKey, id); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "dropped %s\n", id)
		case len(set) > 0:
			pos, err := feed.RequeueDeadFixed(ctx, g.rdb, stream, deadKey, id, set)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "requeued %s with %v as %s\n", id, map[string]string(set), pos)
		default:
			pos, err := feed.RequeueDead(ctx, g.rdb, stream, deadKey, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "requeued %s as %s\n", id, pos)
		}
	}
	return nil
}

func writeDead(w io.Writer, ds []feed.DeadLetter) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEAD ID\tEVT ID\tKIND\tATTEMPTS\tCONSUMER\tSTREAM ID\tAT\tREASON")
	for _, d := range ds {
		evt := d.EvtID
		if evt == "" {
			evt = "-"
		}
		reason := oneLine(d.Reason)
		if d.Truncated != "" || d.Dropped != "" {
			// Not the whole entry: it cannot be requeued.
			reason += " [truncated: not requeueable]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", d.DeadID, evt, orDash(d.Fields[event.FieldKind]),
			d.Attempts, d.Consumer, d.StreamID, d.At.Format(time.RFC3339), reason)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d dead letters\n", len(ds))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
