package e2e_test

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/codemojex/feed/internal/testkit/tmpfs"
)

// chaosTmpfs mounts a tmpfs of size on a fresh directory for the store and
// unmounts it when the test ends, on failure too (registered before the
// renderers start, so it runs after they are killed). Where no tmpfs can be
// mounted (not root, not Linux) it reports false: the run goes on without a
// full-disk spell, and says so, unless tmpfs.RequireEnv is set.
func chaosTmpfs(t *testing.T, size string) (string, bool) {
	t.Helper()
	if err := tmpfs.Usable(); err != nil {
		if tmpfs.Required() {
			t.Fatalf("the full-disk spell mounts a tmpfs: %v; %s is set, so this fails rather than leaves it out", err, tmpfs.RequireEnv)
		}
		t.Logf("chaos: %v: no full-disk spell (set %s=1 to make this a failure)", err, tmpfs.RequireEnv)
		return "", false
	}
	return tmpfs.MustMount(t, size), true
}

// fillDisk makes the filesystem of dir full: it shrinks the tmpfs to what
// is in use plus a little (writing a whole gigabyte takes half a minute on
// a busy machine, which would stall the fault schedule), then fills it
// (tmpfs.Fill) and returns the filler's path.
func fillDisk(dir string) (string, error) {
	var st syscall.Statfs_t
	var err error
	for range 5 { // the store may grow between Statfs and the remount
		if err = syscall.Statfs(dir, &st); err != nil {
			return "", err
		}
		used := (st.Blocks - st.Bfree) * uint64(st.Bsize)
		if err = tmpfs.Resize(dir, fmt.Sprint(used+8<<20)); err == nil {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("shrink tmpfs %s: %w", dir, err)
	}
	return tmpfs.Fill(dir)
}

// freeDisk removes the filler and gives the tmpfs its size back.
func freeDisk(dir, path, size string) error {
	if err := os.Remove(path); err != nil {
		return err
	}
	return tmpfs.Resize(dir, size)
}

// readyz returns a renderer's /readyz status and body; 0 when it does not
// answer.
func readyz(r *renderer) (int, string) {
	resp, err := healthClient.Get(r.url("/readyz"))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}
