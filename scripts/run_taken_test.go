package scripts_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/redistest"
)

// takerScript stands for the server binary: its first start finds its port
// taken by another Redis (another run's, another program's) that bound it
// between run.sh's probe and its own bind, as happens when two start at
// once. The other server is real and keeps its port.
const takerScript = `#!/usr/bin/env bash
real=%q tmp=%q
[[ $1 == --port && ! -e $tmp/taken.pid ]] || exec "$real" "$@"
setsid "$real" --port "$2" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
	--dir "$tmp" >"$tmp/taker.log" 2>&1 </dev/null &
echo $! >"$tmp/taken.pid"
for ((i = 0; i < 200; i++)); do
	[[ $(redis-cli -p "$2" ping 2>/dev/null) == PONG ]] && break
	sleep 0.05
done
exec "$real" "$@"
`

var redisLine = regexp.MustCompile(`Redis: +redis://127\.0\.0\.1:(\d+)/0`)

// TestMakeRunPrivateRedisPortTaken: when another Redis takes the private
// Redis's port between run.sh's probe and the bind, run.sh starts its own
// on the next port and uses it. It used to take the other server's PONG
// for its own: the renderers and the simulator wrote into someone else's
// Redis (another make run's, say), whose consumer names r1..r3 they
// shared, while its own server had exited.
func TestMakeRunPrivateRedisPortTaken(t *testing.T) {
	bin, err := redistest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "run.sh")
	tmp := t.TempDir()
	base := freeBase(t)
	taker := filepath.Join(tmp, "redis-server")
	if err := os.WriteFile(taker, []byte(fmt.Sprintf(takerScript, bin, tmp)), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(tmp, "taken.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	cmd := exec.Command("bash", script)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_URL=") && !strings.HasPrefix(kv, "RUN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"RUN_VAR="+filepath.Join(tmp, "var"), "RUN_BIN="+filepath.Join(tmp, "bin"),
		"RUN_HTTP_PORT="+strconv.Itoa(base), "RUN_REDIS_PORT="+strconv.Itoa(base+10),
		"RUN_RATE=40", "RUN_SEED=7", "RUN_TAIL=0", redistest.ServerEnv+"="+taker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for pid := range startedPids(out.String()) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("run.sh output:\n%s", out.String())
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
	m := redisLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatal("run.sh names no private Redis")
	}
	if m[1] == strconv.Itoa(base+10) {
		t.Errorf("run.sh uses the Redis that took its port (%s), not its own", m[1])
	}
	b, err := os.ReadFile(filepath.Join(tmp, "taken.pid"))
	if err != nil {
		t.Fatalf("the port was never taken: %v", err)
	}
	takenPid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// The run watches its processes once a second: the server that found
	// its port taken must not be among them. It was, and the run stopped
	// everything at its first look ("redis exited with status 1").
	select {
	case err := <-exited:
		t.Fatalf("run.sh exited on its own after it started: %v", err)
	case <-time.After(2500 * time.Millisecond): // two of its looks, measured, not a wait for it
	}

	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("run.sh did not stop within 60s of Ctrl-C")
	}
	for pid, name := range startedPids(out.String()) {
		if alive(pid) {
			t.Errorf("%s (pid %d) still running after Ctrl-C", name, pid)
		}
	}
	if !alive(takenPid) {
		t.Errorf("the other Redis (pid %d) was stopped by run.sh", takenPid)
	}
}
