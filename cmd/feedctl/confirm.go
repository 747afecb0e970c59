package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-isatty"

	"github.com/codemojex/feed/internal/flagenv"
)

// errNotConfirmed is returned when a destructive command was not confirmed.
var errNotConfirmed = errors.New("not confirmed")

// terminal is the operator's side of a command: where a question is asked
// and where its answer comes from.
type terminal struct {
	// ctx ends with a Ctrl-C or a SIGTERM: a question is given up then.
	ctx context.Context
	in  io.Reader
	out io.Writer // questions go to stderr: stdout may be piped
}

// isTTY reports whether r is a terminal (not a pipe, a file or /dev/null).
func isTTY(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// care holds the flags every destructive command takes.
type care struct {
	yes    bool
	dryRun bool
}

func (c *care) flags(fs *flagenv.Set) {
	fs.BoolVar(&c.yes, "yes", false, "do it without asking (needed when stdin is not a terminal)")
	fs.BoolVar(&c.dryRun, "dry-run", false, "show what would be done and change nothing")
}

// confirm asks the operator whether to do what: -yes says yes at once; on
// a terminal the answer must be y or yes; otherwise the command refuses,
// since nobody is there to ask (a script must say -yes).
func (c *care) confirm(t terminal, what string) error {
	if c.yes {
		return nil
	}
	if !isTTY(t.in) {
		return fmt.Errorf("%s: refused: stdin is not a terminal to confirm on; pass -yes to do it, or -dry-run to see what it would do", what)
	}
	fmt.Fprintf(t.out, "%s? [y/N] ", what)
	// The answer is waited for beside the context: feedctl catches
	// SIGINT and SIGTERM, so a Ctrl-C at the question did nothing while
	// the read waited for a line (TestConfirmStopsOnSignal). The read left
	// behind ends with the process.
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(t.in).ReadString('\n')
		got <- answer{line, err}
	}()
	var line string
	select {
	case <-t.ctx.Done():
		fmt.Fprintln(t.out)
		return fmt.Errorf("%s: %w: %w", what, errNotConfirmed, t.ctx.Err())
	case a := <-got:
		if a.err != nil && a.line == "" {
			return fmt.Errorf("%s: %w", what, errNotConfirmed)
		}
		line = a.line
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("%s: %w", what, errNotConfirmed)
}
