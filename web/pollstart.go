package web

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/lesismal/nbio"
	"github.com/lesismal/nbio/nbhttp"
)

// awaitPollers returns once every event loop of eng runs, so that a stop
// can no longer be missed. Its errors are bare; newPoller wraps them.
//
// nbio 1.6.8 starts each poller on its own goroutine, whose loop begins by
// clearing the shutdown flag. A Stop that comes before that line sets the
// flag, which the loop then clears; the loop spins on the stop's eventfd
// for ever, and Stop waits for it. A server closed right after it opened
// hung so (TestCloseRightAfterOpen fails within a few dozen tries without
// this wait). A poller that has read from a socket is past that line: each
// poller gets a socket pair, one byte written to it, and a data handler
// that reports the read.
func awaitPollers(eng *nbhttp.Engine, timeout time.Duration) error {
	n := eng.NPoller
	var hold []io.Closer // every fd made here, closed on return
	defer func() {
		for _, c := range hold {
			c.Close()
		}
	}()
	ran := make(chan struct{}, n)
	covered := make(map[int]bool, n)
	// A socket goes to the poller numbered fd mod n: try fds until every
	// number has one. The kernel hands out the lowest free fd, so a number
	// already covered keeps its fds open and one more, to move the next.
	for tries := 0; len(covered) < n; tries++ {
		if tries >= 8*n {
			return fmt.Errorf("no socket for each of %d pollers", n)
		}
		a, b, err := socketPair()
		if err != nil {
			return err
		}
		hold = append(hold, b)
		c, err := nbio.NBConn(a) // a dup; a itself is closed
		if err != nil {
			a.Close()
			return err
		}
		hold = append(hold, c)
		i := c.Hash() % n
		if covered[i] {
			if f, err := os.Open(os.DevNull); err == nil {
				hold = append(hold, f)
			}
			continue
		}
		covered[i] = true
		c.OnData(func(*nbio.Conn, []byte) {
			select {
			case ran <- struct{}{}:
			default:
			}
		})
		if _, err := eng.AddConn(c); err != nil {
			return err
		}
		if _, err := b.Write([]byte{0}); err != nil {
			return err
		}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for range n {
		select {
		case <-ran:
		case <-deadline.C:
			return fmt.Errorf("not running after %v", timeout)
		}
	}
	return nil
}

// socketPair returns the two ends of a connected Unix stream socket pair.
func socketPair() (net.Conn, net.Conn, error) {
	// SOCK_CLOEXEC is not everywhere; ForkLock keeps a concurrent exec
	// from inheriting the fds before they are marked.
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	var ends [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "pollstart")
		ends[i], err = net.FileConn(f) // a dup of f
		f.Close()
		if err != nil {
			if i == 0 {
				syscall.Close(fds[1])
			} else {
				ends[0].Close()
			}
			return nil, nil, fmt.Errorf("socketpair: %w", err)
		}
	}
	return ends[0], ends[1], nil
}
