package web

import (
	"log/slog"
	"net"
	"sync/atomic"
	"time"
)

// peerTimeoutListener gives every accepted connection a peer timeout
// (Config.PeerTimeout): the kernel drops a connection whose bytes have
// gone unacknowledged that long. A websocket's vanished peer is caught by
// its unanswered ping; an event stream has no way back from the client,
// and without this its pings sit in the kernel's retransmission queue for
// about fifteen minutes, the stream counted in "N watching" all the while.
// The connection is returned as accepted (a *net.TCPConn), so that the
// nbio engine can take its descriptor after the handshake.
type peerTimeoutListener struct {
	net.Listener
	timeout time.Duration
	log     *slog.Logger
	warned  atomic.Bool
}

func (l *peerTimeoutListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if err := setPeerTimeout(tc, l.timeout); err != nil && l.warned.CompareAndSwap(false, true) {
			l.log.Warn("web: peer timeout not set; a vanished event-stream client lingers until the kernel gives up",
				"err", err, "peer_timeout", l.timeout)
		}
	}
	return c, nil
}
