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
	"syscall"
)

const usage = `usage: feedctl [-redis URL] [-group G] command [flags]

commands:
  status                       per game: stream length, group lag, pending, consumers, dead letters
  dead list    -game G         list a game's dead letters
  dead requeue -game G -id ID  put a dead letter back on the game's stream (-all: every one)
  dead drop    -game G -id ID  delete a dead letter (-all: every one)
  replay       -game G         re-deliver a game's retained stream to the group
  rebuild      -db NEW         build a new store from every registered game's stream
  prune        -older-than D   remove games ended more than D ago from the registry
               [-db F] [-streams] [-dry-run] [-yes]   (and from store F, and their streams)
  ping                         exit 0 when Redis answers
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "feedctl:", err)
		os.Exit(1)
	}
}

// Run runs one feedctl command with its arguments.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	g, rest, err := parseGlobal(args, stderr)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	}
	cmd, rest := rest[0], rest[1:]
	switch cmd {
	case "status":
		return g.status(ctx, rest, stdout)
	case "dead":
		return g.dead(ctx, rest, stdout)
	case "replay":
		return g.replay(ctx, rest, stdout)
	case "rebuild":
		return g.rebuild(ctx, rest, stdout, stderr)
	case "prune":
		return g.prune(ctx, rest, stdout, stderr)
	case "ping":
		return g.ping(ctx)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}
