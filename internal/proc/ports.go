package proc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// The servers tests and benchmarks start take their ports from
// [minServerPort, maxServerPort), below Linux's ephemeral range (32768 up,
// /proc/sys/net/ipv4/ip_local_port_range), where :0 listeners (a
// renderer's HTTP port in a test) and outgoing connections would otherwise
// take the port of a server killed for a moment. A cluster node's bus
// port (port+10000) must fall in the range too.
const (
	minServerPort = 12000
	maxServerPort = 32768
)

// ErrPortReserved is returned by Reserve for a port that a server of this
// or another process on the machine holds.
var ErrPortReserved = errors.New("proc: port reserved by another server")

// Reserve reserves port for a server of this process until release is
// called (or the process exits): no other Reserve on the machine, in this
// process or another, gets it meanwhile. The port may still be bound by a
// process that does not reserve; the caller checks it is free.
//
// Why: a test that kills its server and starts it again on the same port
// (a Redis that goes away) left the port free in between, and another
// test's server, probing for a free port, took it. The first test's
// renderers then joined the second test's server, took its consumer names
// (every test names them r1, r2 in group feed) and kept them, and the
// second test's renderer waited for its own name in vain (CI, 6 Dec 2026:
// TestBrowserLiveTimeline, "consumer name is held by a live process").
// A server keeps its reservation while it is stopped, until Close.
//
// The reservation is an exclusive flock(2) on a file named for the port
// under the temporary directory: it is per open file, so two reservations
// in one process conflict too, and the kernel drops it when its holder
// dies, so a killed test binary leaves nothing reserved.
func Reserve(port int) (release func(), err error) {
	dir := filepath.Join(os.TempDir(), "codemojex-ports")
	if err := os.Mkdir(dir, 0o777); err == nil {
		// Like the temporary directory itself: every user's tests reserve
		// here (a read-only open is enough for flock).
		_ = os.Chmod(dir, 0o777|os.ModeSticky)
	} else if !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("proc: reserve port %d: %w", port, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("proc: reserve port %d: %w", port, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %d", ErrPortReserved, port)
		}
		return nil, fmt.Errorf("proc: reserve port %d: %w", port, err)
	}
	return func() { f.Close() }, nil
}

// reserveFree reserves a random port of the servers' range that is free
// now, with the cluster bus port above it when cluster is set, and
// returns it with the function that releases the reservation.
func reserveFree(cluster bool) (int, func(), error) {
	hi := maxServerPort
	if cluster {
		hi -= 10000
	}
	for range 200 {
		port := minServerPort + rand.IntN(hi-minServerPort)
		release, err := Reserve(port)
		if errors.Is(err, ErrPortReserved) {
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		if !cluster {
			if portFree(port) {
				return port, release, nil
			}
			release()
			continue
		}
		bus, err := Reserve(port + 10000)
		if err == nil && portFree(port) && portFree(port+10000) {
			return port, func() { bus(); release() }, nil
		}
		if err == nil {
			bus()
		}
		release()
	}
	return 0, nil, fmt.Errorf("proc: no free port in [%d, %d) for a server", minServerPort, hi)
}

// ReserveAddr reserves a free loopback address for a server of this
// process (Reserve), as 127.0.0.1:PORT: a test that kills that server and
// starts it again on the same address finds the address still its own.
func ReserveAddr() (addr string, release func(), err error) {
	port, release, err := reserveFree(false)
	if err != nil {
		return "", nil, err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), release, nil
}
