package stopsignal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/stopsignal"
)

// A SIGTERM that arrives after the package's init and before NotifyContext
// (in a binary: while its other packages initialise) cancels the context
// NotifyContext returns, with the signal as the cause; after stop, the
// signal takes its default action again and kills the process. It runs in
// a child, the test binary again, so that the kill ends the child only.
func TestSignalBeforeNotifyContext(t *testing.T) {
	if os.Getenv("STOPSIGNAL_CHILD") == "1" {
		child()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalBeforeNotifyContext$")
	cmd.Env = append(os.Environ(), "STOPSIGNAL_CHILD=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("child: %v, want killed by SIGTERM after stop\n%s", err, out)
	}
}

func child() {
	fail := func(msg string) {
		os.Stderr.WriteString("child: " + msg + "\n")
		os.Exit(3)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		fail(err.Error())
	}
	ctx, stop := stopsignal.NotifyContext(context.Background())
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		fail("the SIGTERM before NotifyContext did not cancel its context")
	}
	if got := context.Cause(ctx); got == nil || got.Error() != "terminated signal received" {
		fail(fmt.Sprintf("cause %v, want the signal", got))
	}
	stop()
	// The default action from here: this kills the child.
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		fail(err.Error())
	}
	<-time.After(30 * time.Second) // a bound: the kill ends the child first
	fail("still alive 30s after a SIGTERM that stop gave back to the default action")
}
