package scripts_test

import (
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

// TestMakeRunWhileRunning: a second make run on the same RUN_VAR while the
// first one runs refuses to start and touches nothing of the first. It
// took the live run's processes for a SIGKILLed run's leftovers and
// stopped them (the first run then stopped too, and its cleanup deleted
// the second one's list of processes, so a later SIGKILL of the second
// left its own behind for good).
func TestMakeRunWhileRunning(t *testing.T) {
	bin, err := redistest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "run.sh")
	tmp := t.TempDir()
	base := freeBase(t)
	start := func(name string) *scriptRun {
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
		r := &scriptRun{cmd: cmd, out: filepath.Join(tmp, name+".out"), exited: make(chan error, 1)}
		f, err := os.Create(r.out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { r.exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			for pid := range startedPids(r.output()) {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
			if t.Failed() {
				t.Logf("%s output:\n%s", name, r.output())
			}
		})
		return r
	}

	first := start("first")
	waitFor(t, 4*time.Minute, "the first run to print its URLs", func() bool {
		select {
		case err := <-first.exited:
			t.Fatalf("the first run exited early: %v", err)
		default:
		}
		return strings.Contains(first.output(), "Press Ctrl-C")
	})
	pids := startedPids(first.output())

	second := start("second")
	select {
	case err := <-second.exited:
		if err == nil {
			t.Errorf("the second run exited 0, want a refusal")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the second run did not refuse to start")
	}
	if !strings.Contains(second.output(), "already running") {
		t.Errorf("the second run does not say why it refused")
	}
	for pid, name := range pids {
		if !alive(pid) {
			t.Errorf("the first run's %s (pid %d) was stopped by the second run", name, pid)
		}
	}
	select {
	case err := <-first.exited:
		t.Fatalf("the first run stopped when the second one started: %v", err)
	default:
	}

	if err := syscall.Kill(-first.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("the first run did not stop within 60s of Ctrl-C")
	}
	for pid, name := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still running after Ctrl-C", name, pid)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "var", "run.pids")); !os.IsNotExist(err) {
		t.Errorf("the list of processes outlived the run that owns it: %v", err)
	}
}
