package scripts_test

import (
	"bytes"
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

// TestMakeRunAfterKilledRun: a run that was SIGKILLed cannot stop what it
// started; the next run stops it (README: "a later run stops what a
// SIGKILLed run left behind"): the renderers, the simulator, the private
// Redis, and the tail of the logs, which used to print every log line of
// every later run into the terminal a second time, for ever.
func TestMakeRunAfterKilledRun(t *testing.T) { runAfterKilledRun(t, false) }

// TestMakeRunAfterKilledRunRelative: the same with RUN_VAR and RUN_BIN
// relative (to the repository, where run.sh works). The private Redis of
// the SIGKILLed run, whose working directory is absolute, was not
// recognised as its own and ran on for ever, and the next run started a
// second one on the next port.
func TestMakeRunAfterKilledRunRelative(t *testing.T) { runAfterKilledRun(t, true) }

func runAfterKilledRun(t *testing.T, relative bool) {
	bin, err := redistest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "run.sh")
	tmp := t.TempDir()
	base := freeBase(t)
	// The logs' directory as the tail names it, absolute or relative: the
	// test's own temporary directory is in it.
	logDir := filepath.Join(filepath.Base(filepath.Dir(tmp)), filepath.Base(tmp), "var", "log")
	varDir, binDir := filepath.Join(tmp, "var"), filepath.Join(tmp, "bin")
	if relative {
		root := filepath.Join(filepath.Dir(file), "..")
		if varDir, err = filepath.Rel(root, varDir); err != nil {
			t.Fatal(err)
		}
		if binDir, err = filepath.Rel(root, binDir); err != nil {
			t.Fatal(err)
		}
	}

	// tails lists the tail processes that follow this test's logs.
	tails := func() []int {
		var out []int
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			b, err := os.ReadFile(filepath.Join(d, "cmdline"))
			if err != nil {
				continue
			}
			args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
			if filepath.Base(args[0]) == "tail" && strings.Contains(string(b), logDir+"/") {
				pid, _ := strconv.Atoi(filepath.Base(d))
				out = append(out, pid)
			}
		}
		return out
	}

	start := func(name, tail string) *scriptRun {
		cmd := exec.Command("bash", script)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "REDIS_URL=") && !strings.HasPrefix(kv, "RUN_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env,
			"RUN_VAR="+varDir, "RUN_BIN="+binDir,
			"RUN_HTTP_PORT="+strconv.Itoa(base), "RUN_REDIS_PORT="+strconv.Itoa(base+10),
			"RUN_RATE=40", "RUN_SEED=7", "RUN_TAIL="+tail, redistest.ServerEnv+"="+bin)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// A file, not a pipe: a process left behind that holds the output
		// must not hold up Wait.
		out := filepath.Join(tmp, name+".out")
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := &scriptRun{cmd: cmd, out: out, exited: make(chan error, 1)}
		go func() { r.exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			for pid := range startedPids(r.output()) {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
			for _, pid := range tails() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			if t.Failed() {
				t.Logf("%s output:\n%s", name, r.output())
			}
		})
		waitFor(t, 4*time.Minute, name+" to print its URLs", func() bool {
			select {
			case err := <-r.exited:
				t.Fatalf("%s exited early: %v\n%s", name, err, r.output())
			default:
			}
			return strings.Contains(r.output(), "Press Ctrl-C")
		})
		return r
	}

	first := start("first", "1")
	pids := startedPids(first.output())
	if len(pids) != 5 {
		t.Fatalf("the first run started %v, want redis, three renderers and gamesim", pids)
	}
	waitFor(t, 30*time.Second, "the first run's tail of the logs", func() bool { return len(tails()) == 1 })
	// SIGKILL the script alone, as `kill -9` of make run does.
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.exited

	// A child the run listed just before its SIGKILL, and that has not
	// exec'd its program yet (it is still the run's subshell): planted
	// here as a script named run.sh that becomes gamesim (its argv) a
	// second later. Until 7 Dec 2026 the next run passed it over, and it
	// ran on (a CI run under load left the real gamesim so).
	root := filepath.Join(filepath.Dir(file), "..")
	slow := filepath.Join(t.TempDir(), "run.sh")
	absBin := binDir // as run.sh has it: absolute, its links resolved
	if relative {
		absBin = filepath.Join(root, binDir)
	}
	if absBin, err = filepath.EvalSymlinks(absBin); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(slow, []byte("sleep 1\nexec -a '"+absBin+"/gamesim' sleep 120\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	late := exec.Command("bash", slow)
	late.Dir = root
	late.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := late.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = late.Wait() }()
	t.Cleanup(func() { _ = late.Process.Kill() })
	listed := filepath.Join(varDir, "run.pids")
	if relative {
		listed = filepath.Join(root, listed)
	}
	pidfile, err := os.OpenFile(listed, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pidfile.WriteString(strconv.Itoa(late.Process.Pid) + " gamesim\n"); err != nil {
		t.Fatal(err)
	}
	pidfile.Close()
	pids[late.Process.Pid] = "gamesim caught before its exec"

	second := start("second", "0")
	if !strings.Contains(second.output(), "stopping processes left over from an earlier run") {
		t.Errorf("the second run did not stop what the first one left")
	}
	for pid, name := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) of the SIGKILLed run still running after the next run started", name, pid)
		}
	}
	if left := tails(); len(left) > 0 {
		t.Errorf("the SIGKILLed run's tail of the logs (pid %v) still running after the next run started", left)
	}

	if err := syscall.Kill(-second.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("the second run did not stop within 60s of Ctrl-C")
	}
	for pid, name := range startedPids(second.output()) {
		if alive(pid) {
			t.Errorf("%s (pid %d) still running after Ctrl-C", name, pid)
		}
	}
}

// scriptRun is one run of run.sh whose output goes to a file.
type scriptRun struct {
	cmd    *exec.Cmd
	out    string // the file that holds its output
	exited chan error
}

func (r *scriptRun) output() string {
	b, _ := os.ReadFile(r.out)
	return string(b)
}
