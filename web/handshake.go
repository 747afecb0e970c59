package web

import (
	"encoding/base64"
	"net/http"
	"strings"
)

// checkHandshake answers a request to /live that is no well-formed
// websocket handshake (RFC 6455, 4.1 and 4.2.1) as coder/websocket does
// on the std engine, and reports whether it did: the nbio engine took an
// HTTP/1.0 handshake, a plain GET or another version after it had spent
// the address's upgrade rate, and switched on some of them, where the
// std engine refused them (TestHandshakeNotWellFormed,
// TestHandshakeOneKey). Run before the Origin check and admit, so that a
// refused request spends nothing of the client's. A method other than
// GET never reaches it: getOnly refuses it before.
func checkHandshake(w http.ResponseWriter, r *http.Request) bool {
	code, msg := http.StatusOK, ""
	switch {
	case !r.ProtoAtLeast(1, 1):
		code, msg = http.StatusUpgradeRequired, "websocket: the handshake must be HTTP/1.1 or later, not "+r.Proto
	case !hasToken(r.Header, "Connection", "upgrade"), !hasToken(r.Header, "Upgrade", "websocket"):
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "websocket")
		code, msg = http.StatusUpgradeRequired, "websocket: this is a websocket endpoint: Connection: Upgrade and Upgrade: websocket are required"
	case r.Header.Get("Sec-WebSocket-Version") != "13":
		w.Header().Set("Sec-WebSocket-Version", "13")
		code, msg = http.StatusBadRequest, "websocket: only Sec-WebSocket-Version 13 is supported"
	default:
		// The key comes once (11.3.1): coder/websocket refuses two, nbio
		// took the first.
		switch keys := r.Header.Values("Sec-WebSocket-Key"); {
		case len(keys) == 0:
			code, msg = http.StatusBadRequest, "websocket: no Sec-WebSocket-Key"
		case len(keys) > 1:
			code, msg = http.StatusBadRequest, "websocket: more than one Sec-WebSocket-Key"
		case !validKey(keys[0]):
			code, msg = http.StatusBadRequest, "websocket: Sec-WebSocket-Key is not 16 bytes in base64"
		}
	}
	if code == http.StatusOK {
		return false
	}
	mUpgradesRejected.WithLabelValues("handshake").Inc()
	http.Error(w, msg, code)
	return true
}

// validKey reports whether key is a Sec-WebSocket-Key as RFC 6455 (4.1)
// has a client send it: 16 bytes in base64, padding and all.
func validKey(key string) bool {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(key))
	return err == nil && len(b) == 16
}

// hasToken reports whether one of h's name fields lists token, a
// comma-separated list compared without case ("keep-alive, Upgrade").
func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
