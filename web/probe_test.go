package web_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestProbeAnswered: the one message a page may send, {"t":"probe"}, is
// answered with a probe frame in order with the rest, as often as it is
// sent; lines go on around it (docs/contracts.md). Run on both engines
// (CODEMOJEX_WS_ENGINE).
func TestProbeAnswered(t *testing.T) {
	e := MustOpenEnv(t, nil)
	g := e.gen("g1")
	e.upsert(g.chats(t, 2)...)
	w := e.dial("g1", 0)
	w.lines(2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 3 {
		if err := w.c.Write(ctx, websocket.MessageText, []byte(`{"t":"probe"}`)); err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
		for {
			f := w.next()
			if f.T == "probe" {
				break
			}
			if f.T != "state" {
				t.Fatalf("probe %d: frame %+v before its answer", i, f)
			}
		}
	}
	e.upsert(g.chats(t, 1)...)
	if got := w.lines(1); got[0].Seq == 0 {
		t.Fatalf("line after the probes: %+v", got[0])
	}
}

// TestUnexpectedMessageCloses: any message but a probe closes the socket
// with 1008 (policy violation) and says why; binary ones too.
func TestUnexpectedMessageCloses(t *testing.T) {
	for _, tt := range []struct {
		name string
		typ  websocket.MessageType
		data string
	}{
		{"other text", websocket.MessageText, `{"t":"line","html":"<script>"}`},
		{"probe with spaces", websocket.MessageText, `{ "t": "probe" }`},
		{"binary probe", websocket.MessageBinary, `{"t":"probe"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := MustOpenEnv(t, nil)
			w := e.dial("g1", 0)
			if f := w.next(); f.T != "state" {
				t.Fatalf("first frame %+v, want state", f)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := w.c.Write(ctx, tt.typ, []byte(tt.data)); err != nil {
				t.Fatalf("write: %v", err)
			}
			for {
				_, err := w.readAny(5 * time.Second)
				if err == nil {
					continue // a frame sent before the close
				}
				var ce websocket.CloseError
				if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "unexpected data message") {
					t.Fatalf("read after %q: %v, want a close 1008 saying unexpected data message", tt.data, err)
				}
				return
			}
		})
	}
}
