// Package nbiocheck lends nbio its buffers through a check of their use: a
// buffer freed twice, or written after its free, lets nbio's pool lend one
// buffer to two owners, which puts one socket's bytes on another's wire.
// The web package's tests, and the binaries the crash tests build (tag
// nbiocheck), run nbio through it; a misuse is reported with the stacks
// of the use and of the buffer's last free. Frames and Events check what
// a websocket and an event stream write, as the kernel takes it.
package nbiocheck

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/lesismal/nbio/mempool"
)

// LogMessage is what a binary built with the nbiocheck tag logs for each
// misuse (web/nbiocheck.go); the crash tests fail on it
// (internal/testkit/proctest).
const LogMessage = "web: nbio buffer misused"

// Allocator is a mempool.Allocator that checks each buffer's use against
// its lending and frees.
type Allocator struct {
	inner  mempool.Allocator
	report func(misuse string)

	mu      sync.Mutex
	live    map[uintptr]bool      // backing array → lent out
	freed   map[uintptr][]uintptr // backing array → stack of its last free
	misuse  int
	mallocs int64
}

// New returns an Allocator over inner that calls report, outside its
// lock, with each misuse and its stacks.
func New(inner mempool.Allocator, report func(misuse string)) *Allocator {
	return &Allocator{inner: inner, report: report, live: map[uintptr]bool{}, freed: map[uintptr][]uintptr{}}
}

// Misuses returns how many misuses were reported.
func (a *Allocator) Misuses() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.misuse
}

// Mallocs returns how many buffers were lent in all.
func (a *Allocator) Mallocs() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mallocs
}

// Lent returns how many buffers are lent out now.
func (a *Allocator) Lent() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, l := range a.live {
		if l {
			n++
		}
	}
	return n
}

// Malloc lends a buffer of size bytes.
func (a *Allocator) Malloc(size int) *[]byte {
	p := a.inner.Malloc(size)
	a.mu.Lock()
	a.mallocs++
	msg := a.lend(p)
	a.mu.Unlock()
	a.tell(msg)
	return p
}

// Realloc resizes p (deprecated in mempool, checked all the same).
func (a *Allocator) Realloc(p *[]byte, size int) *[]byte {
	return a.grow(p, func() *[]byte { return a.inner.Realloc(p, size) })
}

// Append appends more to p.
func (a *Allocator) Append(p *[]byte, more ...byte) *[]byte {
	return a.grow(p, func() *[]byte { return a.inner.Append(p, more...) })
}

// AppendString appends more to p.
func (a *Allocator) AppendString(p *[]byte, more string) *[]byte {
	return a.grow(p, func() *[]byte { return a.inner.AppendString(p, more) })
}

// Free takes p back.
func (a *Allocator) Free(p *[]byte) {
	k := arrayOf(p)
	var msg string
	a.mu.Lock()
	if k != 0 {
		if !a.live[k] {
			msg = a.misused("free of a buffer not lent out (a double free)", a.freed[k])
		}
		a.live[k] = false
		a.freed[k] = callers()
	}
	a.mu.Unlock()
	a.tell(msg)
	a.inner.Free(p)
}

func (a *Allocator) grow(p *[]byte, f func() *[]byte) *[]byte {
	k0 := arrayOf(p)
	var msg string
	a.mu.Lock()
	if k0 != 0 && !a.live[k0] {
		msg = a.misused("append to a buffer not lent out (a use after free)", a.freed[k0])
	}
	a.mu.Unlock()
	a.tell(msg)
	q := f()
	if k1 := arrayOf(q); k1 != k0 {
		a.mu.Lock()
		delete(a.live, k0) // regrown: the old array is garbage or back in the pool
		msg = a.lend(q)
		a.mu.Unlock()
		a.tell(msg)
	}
	return q
}

// lend marks p's array lent out; the caller holds a.mu.
func (a *Allocator) lend(p *[]byte) string {
	k := arrayOf(p)
	if k == 0 {
		return ""
	}
	var msg string
	if a.live[k] {
		msg = a.misused("malloc of a buffer already lent out", a.freed[k])
	}
	a.live[k] = true
	return msg
}

// misused counts a misuse and describes it; the caller holds a.mu.
func (a *Allocator) misused(what string, lastFree []uintptr) string {
	a.misuse++
	msg := "nbiocheck: " + what + "\n" + stackOf(callers())
	if lastFree != nil {
		msg += "its last free:\n" + stackOf(lastFree)
	}
	return msg
}

func (a *Allocator) tell(msg string) {
	if msg != "" && a.report != nil {
		a.report(msg)
	}
}

// arrayOf identifies a buffer by its backing array: nbio's pools hand out
// the same array under new slice headers.
func arrayOf(p *[]byte) uintptr {
	if p == nil || cap(*p) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData((*p)[:cap(*p)])))
}

func callers() []uintptr {
	pc := make([]uintptr, 32)
	return pc[:runtime.Callers(4, pc)]
}

func stackOf(pc []uintptr) string {
	var b strings.Builder
	frames := runtime.CallersFrames(pc)
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "\t%s\n\t\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			return b.String()
		}
	}
}
