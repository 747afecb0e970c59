package web_test

import (
	"bufio"
	"io"
	"net"
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
	to   string
	mu   sync.Mutex
	cuts []func()
	all  []net.Conn // browser sides, closed when the test ends

	// down closes every new connection once it has read the request's
	// first line, as a host whose server is gone does (the lines in
	// asked).
	down  atomic.Bool
	asked []string
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
			wg.Add(1)
			go func() { defer wg.Done(); p.relay(c) }()
		}
	}()
	return p
}

func (p *proxy) url(path string) string { return "http://" + p.ln.Addr().String() + path }

func (p *proxy) relay(client net.Conn) {
	server, err := net.Dial("tcp", p.to)
	if err != nil {
		client.Close()
		return
	}
	var once sync.Once
	silent := make(chan struct{})
	cut := func() { once.Do(func() { close(silent); server.Close() }) }
	p.mu.Lock()
	p.cuts = append(p.cuts, cut)
	p.all = append(p.all, client)
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(server, client); done <- struct{}{} }()
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
func (p *proxy) cut() {
	p.mu.Lock()
	cuts := p.cuts
	p.cuts = nil
	p.mu.Unlock()
	for _, c := range cuts {
		c()
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
