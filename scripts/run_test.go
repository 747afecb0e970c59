// Package scripts_test runs scripts/run.sh (what `make run` does) for real:
// a private Redis, three renderers and the simulator, checked through their
// pages, then a Ctrl-C that must leave no process behind.
package scripts_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/wait"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var waitFor = wait.For

// freeBase returns a port p such that p, p+1 and p+2 are free. It draws
// from 10000..21999, so that the script's Redis (p+10...) and a cluster's
// bus ports (p+10010...) stay below Linux's ephemeral range (32768 up),
// where every other test's :0 listener and outgoing connection lands.
func freeBase(tb testing.TB) int {
	tb.Helper()
	for range 100 {
		base := 10000 + rand.Intn(12000)
		ok := true
		for i := range 3 {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	tb.Fatal("no three consecutive free ports")
	return 0
}

func get(url string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var startedRe = regexp.MustCompile(`run: started (.+?) \(pid (\d+)\)`)

// startedPids lists the processes the script says it started.
func startedPids(out string) map[int]string {
	pids := map[int]string{}
	for _, m := range startedRe.FindAllStringSubmatch(out, -1) {
		pid, _ := strconv.Atoi(m[2])
		pids[pid] = m[1]
	}
	return pids
}

func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func TestMakeRun(t *testing.T) { runScript(t, nil, 1) }

// TestMakeRunCluster: RUN_CLUSTER=1 make run starts a private cluster of 3
// masters, each with a replica, and the same renderers and simulator on it.
func TestMakeRunCluster(t *testing.T) { runScript(t, []string{"RUN_CLUSTER=1"}, 6) }

// runScript runs run.sh with env added, checks that it started redises
// server processes, three renderers and the simulator, that every replica
// serves the games live, and that a Ctrl-C stops everything cleanly.
func runScript(t *testing.T, env []string, redises int) {
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
		"RUN_RATE=40", "RUN_SEED=7", "RUN_TAIL=0",
		// The server the tests take (redistest.ServerEnv), not run.sh's
		// own preference.
		redistest.ServerEnv+"="+bin)
	cmd.Env = append(cmd.Env, env...)
	// Its own process group, as a shell gives a foreground job: a Ctrl-C
	// is SIGINT to that group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// Whatever happened, leave nothing behind.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for pid := range startedPids(out.String()) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("run.sh output:\n%s", out.String())
			logs, _ := filepath.Glob(filepath.Join(tmp, "var", "log", "*.log"))
			for _, log := range logs {
				name := strings.TrimSuffix(filepath.Base(log), ".log")
				b, _ := os.ReadFile(log)
				if len(b) > 3000 {
					b = b[len(b)-3000:]
				}
				t.Logf("--- %s.log:\n%s", name, b)
			}
		}
	})

	waitFor(t, 4*time.Minute, "run.sh to print its URLs", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("run.sh exited early: %v", err)
		default:
		}
		return strings.Contains(out.String(), "Press Ctrl-C")
	})
	// The private Redis's data is where RUN_VAR says, and so says run.sh
	// (it said var/redis whatever RUN_VAR was).
	if redises == 1 {
		if want := "data (AOF) in " + filepath.Join(tmp, "var", "redis") + "\n"; !strings.Contains(out.String(), want) {
			t.Errorf("run.sh does not say %q", strings.TrimSpace(want))
		}
	}
	pids := startedPids(out.String())
	if len(pids) != redises+4 {
		t.Fatalf("run.sh started %v, want %d redis, three renderers and gamesim", pids, redises)
	}
	// Every replica serves every game from the shared store, growing live.
	for i := range 3 {
		for _, game := range []string{"game-1", "game-3"} {
			url := fmt.Sprintf("http://127.0.0.1:%d/games/%s", base+i, game)
			waitFor(t, 60*time.Second, url+" showing 5 lines", func() bool {
				code, body := get(url)
				return code == http.StatusOK && strings.Count(body, `<li id="evt_`) >= 5
			})
		}
	}
	_, first := get(fmt.Sprintf("http://127.0.0.1:%d/games/game-2", base))
	waitFor(t, 60*time.Second, "game-2 to grow", func() bool {
		_, now := get(fmt.Sprintf("http://127.0.0.1:%d/games/game-2", base+1))
		return strings.Count(now, `<li id="evt_`) > strings.Count(first, `<li id="evt_`)
	})

	// Ctrl-C.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("run.sh: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run.sh did not stop within 60s of Ctrl-C")
	}
	if !strings.Contains(out.String(), "run: stopped;") {
		t.Fatal("run.sh did not report a clean stop")
	}
	for pid, name := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still running after Ctrl-C", name, pid)
		}
	}
	if strings.Contains(out.String(), "SIGKILL") {
		t.Errorf("a process had to be SIGKILLed: the stop was not clean")
	}
	for _, name := range []string{"r1", "r2", "r3"} {
		b, _ := os.ReadFile(filepath.Join(tmp, "var", "log", name+".log"))
		if !bytes.Contains(b, []byte("shutting down")) && !bytes.Contains(b, []byte("closed")) {
			t.Errorf("%s.log shows no graceful shutdown", name)
		}
	}
}
