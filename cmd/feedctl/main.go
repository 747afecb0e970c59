// Command feedctl is the operator's tool for codemojex feed: the group's
// status, dead letters, replay of a game, rebuild of a store and
// retention (prune).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/codemojex/feed/internal/flagenv"
	"github.com/codemojex/feed/internal/untrusted"
)

const usage = `usage: feedctl [-redis URL] [-group G] [-future-bound D] [-timeout D] command [flags]

commands:
  status [-recent N] [-all]    per game: stream length, group lag, pending, consumers, dead letters;
                               the N (200) most recently active games, or every game (-all)
  dead list    -game G [-n N]  list a game's dead letters, the oldest N (100; 0: all)
  dead requeue -game G -id ID  put a dead letter back on the game's stream (-all: every one);
                               refuses entries the renderer would dead-letter again (-set fixes, -force)
  dead drop    -game G -id ID  delete a dead letter (-all: every one)
  replay       -game G         re-deliver a game's retained stream to the group
  rebuild      -db NEW         build a new store from every registered game's stream
  prune        -older-than D   remove games ended more than D ago from the registry
               [-db F] [-streams] [-dry-run] [-yes]   (and from store F, and their streams)
  ping                         exit 0 when Redis answers

dead drop, dead requeue -all, replay, prune and rebuild onto an existing file ask
for confirmation on a terminal; -yes answers for a script, and without a
terminal or -yes they refuse. -dry-run shows what they would do.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		// A command line the flag package refused (-h too) is already
		// written, with the usage, and exits 2 as the flag package's own
		// ExitOnError does; it was written twice and exited 1
		// (TestFeedctlFlagErrorWrittenOnce).
		if le := (*flagenv.LineError)(nil); errors.Is(err, flag.ErrHelp) || errors.As(err, &le) {
			os.Exit(2)
		}
		printErr(os.Stderr, err)
		os.Exit(1)
	}
}

// printErr writes err to w as "feedctl: " lines, one for each error it
// joins (errors.Join: a requeue's refused and truncated letters, say),
// each with its control characters escaped. Escaping the joined text
// whole printed its newlines as a literal \n inside one line.
func printErr(w io.Writer, err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		// Only a join's text is its errors' texts a line each; another
		// error that wraps several (fmt.Errorf with two %w) says more.
		errs := j.Unwrap()
		texts := make([]string, len(errs))
		for i, e := range errs {
			texts[i] = e.Error()
		}
		if err.Error() == strings.Join(texts, "\n") {
			for _, e := range errs {
				printErr(w, e)
			}
			return
		}
	}
	fmt.Fprintln(w, "feedctl:", untrusted.Escape(err.Error()))
}

// Run runs one feedctl command with its arguments. Destructive commands
// ask on stderr and read the answer from stdin when it is a terminal.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	g, rest, err := parseGlobal(ctx, args, stderr)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		writeUsage(stderr)
		return flag.ErrHelp
	}
	cmd, rest := rest[0], rest[1:]
	t := terminal{ctx: ctx, in: stdin, out: stderr}
	switch cmd {
	case "status":
		return g.status(ctx, rest, stdout, stderr)
	case "dead":
		return g.dead(ctx, rest, t, stdout)
	case "replay":
		return g.replay(ctx, rest, t, stdout)
	case "rebuild":
		return g.rebuild(ctx, rest, t, stdout, stderr)
	case "prune":
		return g.prune(ctx, rest, t, stdout, stderr)
	case "ping":
		return g.ping(ctx, rest, stderr)
	case "help", "-h", "--help":
		writeUsage(stdout)
		return nil
	}
	writeUsage(stderr)
	return fmt.Errorf("unknown command %s", untrusted.Escape(cmd))
}
