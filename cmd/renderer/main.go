// Command renderer is one codemojex feed replica: it consumes the games'
// streams in a consumer group, renders and stores each event, and serves the
// live timeline to browsers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/codemojex/feed/internal/renderer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	m := renderer.NewMain()
	if err := m.ParseFlags(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "renderer:", err)
		os.Exit(2)
	}
	if err := m.Run(ctx); err != nil {
		closeErr := m.Close()
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// Stopped while starting (waiting for its consumer name, or
			// for Redis): a clean stop, as docs/operations.md says.
			if closeErr != nil {
				fmt.Fprintln(os.Stderr, "renderer: close:", closeErr)
				os.Exit(1)
			}
			m.Logger.Info("stopped while starting", "consumer", m.Config.Consumer, "group", m.Config.Group)
			return
		}
		fmt.Fprintln(os.Stderr, "renderer:", err)
		os.Exit(1)
	}
	<-ctx.Done()
	stop() // a second Ctrl-C kills at once, also while draining
	m.Logger.Info("shutting down", "consumer", m.Config.Consumer, "group", m.Config.Group)
	if err := m.Shutdown(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "renderer: close:", err)
		os.Exit(1)
	}
}
