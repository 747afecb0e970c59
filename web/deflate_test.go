package web_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/web"
)

// countingConn counts the bytes read from a client's connection: what
// crossed the wire, compressed or not.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// dialCounting dials game's live socket from the cursor 0, offering
// permessage-deflate (no context takeover) when compress is set, and
// counts the bytes it reads in n.
func dialCounting(tb testing.TB, e *env, game string, compress bool, n *atomic.Int64) *websocket.Conn {
	tb.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, n}, nil
	}}}
	mode := websocket.CompressionDisabled
	if compress {
		mode = websocket.CompressionNoContextTakeover
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, e.liveURL(game, 0), &websocket.DialOptions{HTTPClient: hc, CompressionMode: mode})
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	c.SetReadLimit(1 << 20)
	tb.Cleanup(func() { c.CloseNow() })
	return c
}

// readLines reads frames until n line frames came, and returns every frame
// but watching ones (they come whenever a viewer count moves).
func readLines(tb testing.TB, c *websocket.Conn, n int) []string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	for lines := 0; lines < n; {
		_, b, err := c.Read(ctx)
		if err != nil {
			tb.Fatalf("read after %d lines: %v", lines, err)
		}
		var f struct {
			T string `json:"t"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			tb.Fatalf("frame %q: %v", b, err)
		}
		if f.T == "line" {
			lines++
		}
		if f.T != "watching" {
			got = append(got, string(b))
		}
	}
	return got
}

// Sockets that offer permessage-deflate get the same frames as the others
// in fewer bytes on the nbio engine, each frame compressed once however
// many sockets take it; with NoCompression, or on the std engine, nobody's
// frames are compressed.
func TestDeflate(t *testing.T) {
	for _, tc := range []struct {
		name string
		off  bool
	}{{"negotiated", false}, {"NoCompression", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := MustOpenEnv(t, func(c *web.Config) { c.NoCompression = tc.off })
			g := e.gen("g1")
			e.upsert(g.chats(t, 1)...)
			var plainN, zN [3]atomic.Int64
			plain := dialCounting(t, e, g.game, false, &plainN[0])
			var zs [3]*websocket.Conn
			for i := range zs {
				zs[i] = dialCounting(t, e, g.game, true, &zN[i])
			}
			// Each socket's backfill (its panel, the first line) is its
			// own; once a socket has the line, its backfill is over and
			// every later frame is the hub's, shared.
			readLines(t, plain, 1)
			for _, z := range zs {
				readLines(t, z, 1)
			}
			before := e.srv.Stats()
			mFrames := metric(t, "codemojex_web_frames_deflated_total", nil)
			mPlain := metric(t, "codemojex_web_deflate_bytes_total", map[string]string{"form": "plain"})
			mPacked := metric(t, "codemojex_web_deflate_bytes_total", map[string]string{"form": "deflated"})
			plainN[0].Store(0)
			zN[0].Store(0)

			const lines = 30
			for i := 0; i < lines; i++ {
				e.upsert(g.ev(t, event.KindChat, "player", "ada", "text", "gg, that was close: 🍎🍌🍇🍓 again and again and again"))
			}
			want := readLines(t, plain, lines)
			for i, z := range zs {
				if got := readLines(t, z, lines); !eq(got, want) {
					t.Fatalf("compressing socket %d read %d frames %q, want the plain socket's %q", i, len(got), got, want)
				}
			}

			after := e.srv.Stats()
			deflated := after.FramesDeflated - before.FramesDeflated
			plainBytes, packedBytes := after.DeflatePlainBytes-before.DeflatePlainBytes, after.DeflatedBytes-before.DeflatedBytes
			// The metrics are the Stats, summed over the process's Servers
			// (the earlier ones closed, so their part does not move).
			for _, m := range []struct {
				name string
				got  float64
				want int64
			}{
				{"frames deflated", metric(t, "codemojex_web_frames_deflated_total", nil) - mFrames, deflated},
				{"plain bytes", metric(t, "codemojex_web_deflate_bytes_total", map[string]string{"form": "plain"}) - mPlain, plainBytes},
				{"deflated bytes", metric(t, "codemojex_web_deflate_bytes_total", map[string]string{"form": "deflated"}) - mPacked, packedBytes},
			} {
				if int64(m.got) != m.want {
					t.Errorf("metric of %s moved by %v, Stats by %d", m.name, m.got, m.want)
				}
			}
			ratio := float64(zN[0].Load()) / float64(plainN[0].Load())
			t.Logf("%d frames: %d bytes plain, %d compressed (%.2f), %d compressions", len(want), plainN[0].Load(), zN[0].Load(), ratio, deflated)
			if tc.off || e.cfg.WSEngine == web.WSEngineStd {
				if deflated != 0 || ratio < 0.95 {
					t.Fatalf("%d compressions, %.2f of the bytes: compressed where it should not be", deflated, ratio)
				}
				return
			}
			if ratio > 0.75 {
				t.Fatalf("a compressing socket read %.2f of a plain one's bytes, want under 0.75", ratio)
			}
			if deflated == 0 || deflated > int64(len(want)) {
				t.Fatalf("%d compressions for %d frames to three sockets, want one per frame at most", deflated, len(want))
			}
			// Each chat line is 128+ bytes and shrinks: counted at both sizes.
			if plainBytes < deflated*128 || packedBytes <= 0 || float64(packedBytes) > 0.75*float64(plainBytes) {
				t.Fatalf("%d frames deflated from %d to %d bytes, want 128+ bytes each, shrunk under 0.75", deflated, plainBytes, packedBytes)
			}
		})
	}
}

// A handshake gets compressed frames when it offers permessage-deflate and
// no offer asks for a window smaller than the compressor's.
func TestOffersDeflate(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{"permessage-deflate"}, true},
		{[]string{"permessage-deflate; client_max_window_bits"}, true}, // Chromium's offer
		{[]string{"x-webkit-deflate-frame"}, false},
		{[]string{"foo; bar=1, permessage-deflate ; client_no_context_takeover"}, true},
		{[]string{"foo", "permessage-deflate"}, true},
		{[]string{"permessage-deflate; server_max_window_bits=10"}, false},
		{[]string{"permessage-deflate; server_max_window_bits=10, permessage-deflate"}, false},
	} {
		if got := web.OffersDeflate(tc.values...); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.values, got, tc.want)
		}
	}
}

// TestOffersDeflateAgreesWithHandshake: offersDeflate reads a handshake's
// Sec-WebSocket-Extensions as nbio's upgrader does. Where it says yes, the
// handshake's answer must accept permessage-deflate, or the client gets
// compressed frames it never agreed to; where the answer accepts, it says
// yes too, bar an offer of server_max_window_bits (frames then go plain).
// Malformed values are where a loose reading and nbio's parted ways.
func TestOffersDeflateAgreesWithHandshake(t *testing.T) {
	e := MustOpenEnv(t, func(c *web.Config) { c.WSEngine = web.WSEngineNbio })
	for _, v := range []string{
		"permessage-deflate",
		"permessage-deflate; client_max_window_bits",
		"foo; bar=1, permessage-deflate ; client_no_context_takeover",
		`permessage-deflate; x="a \"quoted\" value"`,
		"permessage-deflate; server_max_window_bits=10",
		"permessage-deflate, foo bar",
		"permessage-deflate; foo bar",
		"permessage-deflate;",
		"permessage-deflate; =1",
		`permessage-deflate; x="unterminated`,
		"permessage deflate",
		"foo bar, permessage-deflate",
		";permessage-deflate",
		"permessage-deflate x",
		"permessage-deflate; x=1 y",
		"x-webkit-deflate-frame",
	} {
		accepted := handshakeAccepts(t, e, v)
		ours := web.OffersDeflate(v)
		if ours && !accepted {
			t.Errorf("%q: offersDeflate says yes, the handshake's answer did not accept", v)
		}
		if accepted && !ours && !strings.Contains(v, "server_max_window_bits") {
			t.Errorf("%q: the handshake accepted, offersDeflate says no", v)
		}
	}
}

// handshakeAccepts opens a websocket with Sec-WebSocket-Extensions: ext on
// a raw connection and reports whether the server's 101 accepted
// permessage-deflate.
func handshakeAccepts(t *testing.T, e *env, ext string) bool {
	t.Helper()
	c, _, resp := rawUpgrade(t, e, "g1", "Sec-WebSocket-Extensions: "+ext+"\r\n")
	defer c.Close()
	return strings.Contains(resp.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate")
}
