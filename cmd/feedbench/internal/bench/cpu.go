package bench

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of /proc/PID/stat times (100 on Linux).
const clockTick = 100

// ProcCPU returns the user+system CPU time a process has used so far.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: %q", pid, s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bench: /proc/%d/stat: %q", pid, s)
	}
	return time.Duration(utime+stime) * time.Second / clockTick, nil
}

// SelfCPU returns the user+system CPU time this process has used so far.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter measures the CPU this process and a Redis server use between
// Start and Stop: on a shared machine, work per CPU-second is steadier than
// work per wall-clock second.
type cpuMeter struct {
	redisPid      int
	self0, redis0 time.Duration
	Self, Redis   time.Duration
}

func (m *cpuMeter) Start() {
	m.self0 = SelfCPU()
	m.redis0, _ = ProcCPU(m.redisPid)
}

func (m *cpuMeter) Stop() {
	m.Self = SelfCPU() - m.self0
	r, _ := ProcCPU(m.redisPid)
	m.Redis = r - m.redis0
}

// Total is the CPU both used.
func (m *cpuMeter) Total() time.Duration { return m.Self + m.Redis }

// startCPUProfile starts a CPU profile into path ("" for none) and returns
// its stop function.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func mustCPU(pid int) time.Duration {
	d, _ := ProcCPU(pid)
	return d
}
