// Command renderer is one codemojex feed replica: it consumes the games'
// streams in a consumer group, renders and stores each event, and serves the
// live timeline to browsers.
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"

	"github.com/codemojex/feed/internal/renderer"
	"github.com/codemojex/feed/internal/stopsignal"
)

func main() {
	// SIGINT and SIGTERM are caught from stopsignal's package init on, not
	// from here: one that arrives while the other packages initialise (30
	// to 150 ms) is a stop while starting, exit status 0, where it killed
	// the process (status 143; TestTermDuringInit).
	ctx, stop := stopsignal.NotifyContext(context.Background())
	defer stop()

	m := renderer.NewMain()
	if err := m.ParseFlags(os.Args[1:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			// Refused before -log-level is known, yet one line in the
			// format of every other: an operator who greps the logs for
			// level=ERROR finds why a renderer never started, where it
			// was a plain "renderer: …" line, and for a value the flag
			// package refused, after its copy of the error and the usage
			// of every flag (TestFlagErrorIsOneSlogLine). The usage is
			// one -h away.
			slog.New(slog.NewTextHandler(os.Stderr, nil)).Error("bad flags", "err", err, "help", "renderer -h")
		}
		os.Exit(2)
	}
	if err := m.Run(ctx); err != nil {
		// Stopped while starting (waiting for its consumer name, or for
		// Redis) is a clean stop, as docs/operations.md says.
		stopped := ctx.Err() != nil && errors.Is(err, context.Canceled)
		// The process is stopping, as after ctx.Done below: a second
		// signal (or, when the start failed, any) kills at once instead
		// of waiting out Close. Until 6 Dec 2026 this path kept the
		// signals caught, and a Close held up (a client's connection
		// mid-request holds it 5 s) ignored them
		// (TestSecondTermDuringCloseOfStart).
		stop()
		// Run set up m.Logger: the last lines are slog's, with the
		// replica's keys, as every line before them (before 6 Dec 2026
		// they were plain "renderer: …" lines, TestLogsOneFormatAndLevel).
		log := m.Logger.With("consumer", m.Config.Consumer, "group", m.Config.Group)
		if stopped {
			log.Info("shutting down")
		} else {
			log.Error("start failed", "err", err)
		}
		if err := m.Close(); err != nil {
			log.Error("close failed", "err", err)
			os.Exit(1)
		}
		if !stopped {
			os.Exit(1)
		}
		log.Info("stopped while starting")
		return
	}
	log := m.Logger.With("consumer", m.Config.Consumer, "group", m.Config.Group)
	<-ctx.Done()
	stop() // a second Ctrl-C kills at once, also while draining
	log.Info("shutting down")
	if err := m.Shutdown(context.Background()); err != nil {
		log.Error("close failed", "err", err)
		os.Exit(1)
	}
}
