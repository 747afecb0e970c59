// Package tmpfs mounts small tmpfs filesystems for the tests that fill a
// disk (the store's full-disk faults, the chaos suite's full-disk spell).
// Mounting needs root and Linux; elsewhere those tests say why they cannot
// run, and fail instead when RequireEnv is set, as CI sets it.
package tmpfs

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// RequireEnv, when set, makes a test that needs a tmpfs fail where it
// cannot mount one, instead of skipping it or leaving its fault out: CI
// runs as root on Linux and sets it (.ci/run).
const RequireEnv = "CODEMOJEX_REQUIRE_ROOT"

// ErrUnsupported is Usable's answer off Linux.
var ErrUnsupported = errors.New("tmpfs: mounting needs Linux")

// Usable returns nil when this process can mount a tmpfs, else why not.
func Usable() error {
	if !supported {
		return ErrUnsupported
	}
	if os.Geteuid() != 0 {
		return errors.New("tmpfs: mounting needs root")
	}
	return nil
}

// Required reports whether RequireEnv is set.
func Required() bool { return os.Getenv(RequireEnv) != "" }

// SkipOrFail skips tb because of err (what it needs and cannot have here),
// or fails it when RequireEnv is set: CI must not skip such a test silently.
func SkipOrFail(tb testing.TB, err error) {
	tb.Helper()
	if Required() {
		tb.Fatalf("%v; %s is set, so this fails rather than skips", err, RequireEnv)
	}
	tb.Skipf("%v (set %s=1 to make this a failure)", err, RequireEnv)
}

// Require is SkipOrFail unless this process can mount a tmpfs (Usable).
func Require(tb testing.TB) {
	tb.Helper()
	if err := Usable(); err != nil {
		SkipOrFail(tb, err)
	}
}

// MustMount mounts a tmpfs of size (mount's "size=" option: "8m", or bytes)
// on a fresh directory and returns it. It unmounts it when the test ends,
// after everything registered later has been closed; a mount something
// still holds is detached, and the test fails saying so.
func MustMount(tb testing.TB, size string) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := mount(dir, size); err != nil {
		tb.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	tb.Cleanup(func() {
		if err := unmount(dir, false); err != nil {
			tb.Errorf("unmount %s: %v", dir, err)
			if err := unmount(dir, true); err != nil {
				tb.Errorf("lazy unmount %s: %v", dir, err)
			}
		}
	})
	return dir
}

// Resize changes the size of the tmpfs mounted on dir.
func Resize(dir, size string) error {
	if err := resize(dir, size); err != nil {
		return fmt.Errorf("tmpfs: resize %s to %s: %w", dir, size, err)
	}
	return nil
}
