// Package bufpool lends the byte buffers the renderer's hot path renders
// into: a line's body for the store, a line item or a scoreboard for a
// websocket frame. What is rendered is copied out (into a string or a
// frame) before the buffer goes back.
package bufpool

import (
	"bytes"
	"sync"
)

// maxCap keeps one freak render (a 10k-character hostile name, a board of
// hundreds of players) from pinning a large buffer in the pool forever.
const maxCap = 64 << 10

var pool = sync.Pool{New: func() any {
	b := new(bytes.Buffer)
	b.Grow(1024)
	return b
}}

// Get returns an empty buffer.
func Get() *bytes.Buffer {
	b := pool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

// Put gives b back; nothing of it may be used afterwards.
func Put(b *bytes.Buffer) {
	if b.Cap() <= maxCap {
		pool.Put(b)
	}
}
