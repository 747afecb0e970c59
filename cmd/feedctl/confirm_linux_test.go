package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// openPTY opens a pseudo-terminal and returns its terminal side (what a
// command reads its answers from) and the side that types them; both are
// closed when the test ends. It fails rather than skips without one: a
// skipped test is a failing one in CI, and every Linux host has /dev/ptmx.
func openPTY(t *testing.T) (tty, typer *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the terminal side: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m
}

// syncBuffer is a strings.Builder safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestConfirmStopsOnSignal: a Ctrl-C (SIGINT or SIGTERM: feedctl's context
// ends) while a command asks [y/N] on a terminal stops the command at once,
// refused, with nothing done. The question read the terminal until a line
// came, whatever the context: feedctl catches the signals, so Ctrl-C at
// the prompt did nothing, and feedctl waited for Enter.
func TestConfirmStopsOnSignal(t *testing.T) {
	s := redistest.MustStart(t)
	tty, _ := openPTY(t)
	path := filepath.Join(t.TempDir(), "feed.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"-redis", "redis://" + s.Addr, "rebuild", "-db", path}, tty, &out, &errOut)
	}()
	proctest.WaitFor(t, 10*time.Second, func() bool { return strings.Contains(errOut.String(), "[y/N]") },
		"the rebuild's question on stderr (have %q)", errOut.String())
	cancel() // Ctrl-C
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("rebuild stopped at its question: %v, want it refused as stopped", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("rebuild still waits for an answer 10s after its context ended\nstdout: %s\nstderr: %s", out.String(), errOut.String())
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the existing file after a stopped rebuild: %v, %v; want it untouched", fi, err)
	}
}
