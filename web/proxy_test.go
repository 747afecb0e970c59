package web_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxy is a TCP relay in front of a server. cut makes the connections it
// relays go silent the way a phone's do when it sleeps or changes network:
// the server side is closed, the browser side stays open and hears nothing,
// so the browser's socket still looks open.
type proxy struct {
	tb   testing.TB
	ln   net.Listener
	mu   sync.Mutex
	to   string // under mu
	cuts []*relayed
	seen []string   // every request line relayed, in order; under mu
	all  []net.Conn // browser sides, closed when the test ends

	// down closes every new connection once it has read the request's
	// first line, as a host whose server is gone does (the lines in
	// asked).
	down  atomic.Bool
	asked []string

	// hang holds every new connection open, unanswered and unrelayed,
	// until the browser or the test ends it, as a dead network link does
	// (the request goes out, nothing comes back); hung counts those held
	// now.
	hang atomic.Bool
	hung atomic.Int64
}

// hold reads c until the browser closes it, answering nothing.
func (p *proxy) hold(c net.Conn) {
	p.hung.Add(1)
	defer p.hung.Add(-1)
	p.mu.Lock()
	p.all = append(p.all, c)
	p.mu.Unlock()
	io.Copy(io.Discard, c)
	c.Close()
}

// refuse reads the request line of c and closes it.
func (p *proxy) refuse(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	p.mu.Lock()
	p.asked = append(p.asked, line)
	p.mu.Unlock()
}

// refusedPaths returns the request lines refuse saw.
func (p *proxy) refusedPaths() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

func mustStartProxy(tb testing.TB, to string) *proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &proxy{tb: tb, ln: ln, to: to}
	var wg sync.WaitGroup
	tb.Cleanup(func() {
		ln.Close()
		p.cut()
		wg.Wait()
		p.mu.Lock()
		for _, c := range p.all {
			c.Close()
		}
		p.mu.Unlock()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.down.Load() {
				go p.refuse(c)
				continue
			}
			if p.hang.Load() {
				// Not waited for: the cleanup closes c with the others.
				go p.hold(c)
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); p.relay(c) }()
		}
	}()
	return p
}

func (p *proxy) url(path string) string { return "http://" + p.ln.Addr().String() + path }

// retarget sends the connections the proxy accepts from now on to addr, as
// a balancer that moved the browser to another host does; those it relays
// already stay where they are.
func (p *proxy) retarget(addr string) {
	p.mu.Lock()
	p.to = addr
	p.mu.Unlock()
}

// relayed is one connection the proxy relays.
type relayed struct {
	cut   func()
	mu    sync.Mutex
	asked string // the request line of the last request the browser sent on it
}

// sniffer is the browser's side of a relayed connection as the relay reads
// it: it notes each request's line in rc. A browser sends a request (a GET,
// no body) in one write, and the next one on the connection only once the
// response came, so a read whose first line ends in the protocol's name
// starts a request.
type sniffer struct {
	r  io.Reader
	rc *relayed
	p  *proxy
}

func (s sniffer) Read(b []byte) (int, error) {
	n, err := s.r.Read(b)
	if line, _, ok := bytes.Cut(b[:n], []byte("\r\n")); ok && bytes.HasSuffix(line, []byte(" HTTP/1.1")) {
		s.rc.mu.Lock()
		s.rc.asked = string(line)
		s.rc.mu.Unlock()
		s.p.mu.Lock()
		s.p.seen = append(s.p.seen, string(line))
		s.p.mu.Unlock()
	}
	return n, err
}

// requests returns how many requests relayed so far had path in their
// request line.
func (p *proxy) requests(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, line := range p.seen {
		if strings.Contains(line, path) {
			n++
		}
	}
	return n
}

func (p *proxy) relay(client net.Conn) {
	p.mu.Lock()
	to := p.to
	p.mu.Unlock()
	server, err := net.Dial("tcp", to)
	if err != nil {
		client.Close()
		return
	}
	var once sync.Once
	silent := make(chan struct{})
	rc := &relayed{cut: func() { once.Do(func() { close(silent); server.Close() }) }}
	p.mu.Lock()
	p.cuts = append(p.cuts, rc)
	p.all = append(p.all, client)
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(server, sniffer{client, rc, p}); done <- struct{}{} }()
	go func() { io.Copy(client, server); done <- struct{}{} }()
	select {
	case <-done:
		// A normal end (either side closed): close both.
		server.Close()
		client.Close()
	case <-silent:
		// Cut: the browser side stays open, unanswered, until the browser
		// gives up on it or the test ends.
		go func() { io.Copy(io.Discard, client); client.Close() }()
	}
}

// cut silences every connection relayed so far; new ones relay normally.
func (p *proxy) cut() { p.cutAsked("") }

// cutAsked silences the connections relayed so far whose last request's
// line holds path: the one an event stream came on, say, and not the
// idle ones the browser keeps for its next requests (silenced, they would
// hold up those requests until the page gives up on them).
func (p *proxy) cutAsked(path string) {
	p.mu.Lock()
	var cuts []*relayed
	kept := p.cuts[:0]
	for _, rc := range p.cuts {
		rc.mu.Lock()
		hit := strings.Contains(rc.asked, path)
		rc.mu.Unlock()
		if hit {
			cuts = append(cuts, rc)
		} else {
			kept = append(kept, rc)
		}
	}
	p.cuts = kept
	p.mu.Unlock()
	for _, rc := range cuts {
		rc.cut()
	}
}

// closeAll closes every connection relayed so far, both sides: the
// browser sees its connections end, as when the server's host goes down.
func (p *proxy) closeAll() {
	p.cut()
	p.mu.Lock()
	all := p.all
	p.all = nil
	p.mu.Unlock()
	for _, c := range all {
		c.Close()
	}
}
