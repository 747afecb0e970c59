package scripts_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestMakeRunOutputGone: `make run 2>&1 | tee run.log`, then Ctrl-C: the
// whole foreground job gets SIGINT, tee dies with it, and the script's
// messages while stopping go to a pipe nobody reads (the same holds for a
// terminal that was closed). The script must still stop every process it
// started.
func TestMakeRunOutputGone(t *testing.T) {
	bin, err := redistest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "run.sh")
	tmp := t.TempDir()
	base := freeBase(t)
	cmd := exec.Command("bash", script)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_URL=") && !strings.HasPrefix(kv, "RUN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"RUN_VAR="+filepath.Join(tmp, "var"), "RUN_BIN="+filepath.Join(tmp, "bin"),
		"RUN_HTTP_PORT="+strconv.Itoa(base), "RUN_REDIS_PORT="+strconv.Itoa(base+10),
		"RUN_RATE=40", "RUN_SEED=7", "RUN_TAIL=0", redistest.ServerEnv+"="+bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var out strings.Builder
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for pid := range startedPids(out.String()) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	// Read like tee until the banner, then go away as tee does on Ctrl-C.
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "Press Ctrl-C") {
			break
		}
	}
	r.Close()
	pids := startedPids(out.String())
	if len(pids) != 5 {
		t.Fatalf("run.sh started %v\n%s", pids, out.String())
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		t.Logf("run.sh exited: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("run.sh did not stop within 60s of Ctrl-C")
	}
	for pid, name := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still running after Ctrl-C", name, pid)
		}
	}
}
