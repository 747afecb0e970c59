package web

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/codemojex/feed/internal/bufpool"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/jsonstr"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
)

// Frame types of the websocket protocol (docs/contracts.md).
const (
	frameLine  = "line"
	frameState = "state"
	frameBoard = "board"
	frameReset = "reset"
	frameProbe = "probe"

	// probeMessage is the one message a page may send (see readProbes).
	probeMessage = `{"t":"probe"}`
)

// wireFrame is the JSON shape of every websocket frame.
type wireFrame struct {
	T    string `json:"t"`
	Seq  int64  `json:"seq,omitempty"`
	ID   string `json:"id,omitempty"`
	HTML string `json:"html,omitempty"`
	N    int64  `json:"n,omitempty"` // watching: viewers (omitted when 0)
}

// encode marshals a frame as encoding/json would with HTML escaping off
// (the payload is HTML meant for the page; JSON string escaping alone keeps
// it a string), into one allocation sized for the frame: the tailer encodes
// every line once per watched game and the bytes live until every client
// wrote them.
func encode(f wireFrame) []byte { return encodeHTML(f, nil) }

// encodeHTML is encode with the html field's text in html when f.HTML is
// empty: frames whose HTML was rendered into a pooled buffer (bufpool).
func encodeHTML(f wireFrame, html []byte) []byte {
	// HTML's escapes are nearly all the quotes of its attributes: sized
	// for them, the frame is one allocation, not a regrowth and a copy.
	n := 32 + len(f.T) + len(f.ID) + len(f.HTML) + strings.Count(f.HTML, `"`) + len(f.HTML)/64 +
		len(html) + bytes.Count(html, quote) + len(html)/64
	b := make([]byte, 0, n)
	b = append(b, `{"t":`...)
	b = jsonstr.Append(b, f.T)
	if f.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendInt(b, f.Seq, 10)
	}
	if f.ID != "" {
		b = append(b, `,"id":`...)
		b = jsonstr.Append(b, f.ID)
	}
	switch {
	case f.HTML != "":
		b = append(b, `,"html":`...)
		b = jsonstr.Append(b, f.HTML)
	case len(html) > 0:
		b = append(b, `,"html":`...)
		b = jsonstr.AppendBytes(b, html)
	}
	if f.N != 0 {
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, f.N, 10)
	}
	return append(b, '}')
}

var quote = []byte{'"'}

// lineItem wraps a stored line body in its <li>, the same markup the page
// renders server-side, so the script inserts it as is.
func lineItem(l store.Line) string {
	return templates.LineItemHTML(l.Seq, l.EvtID, l.Kind, l.HTML)
}

func lineFrame(l store.Line) frame {
	b := bufpool.Get()
	defer bufpool.Put(b)
	templates.WriteLineItem(b, l.Seq, l.EvtID, l.Kind, l.HTML)
	data := encodeHTML(wireFrame{T: frameLine, Seq: l.Seq, ID: l.EvtID}, b.Bytes())
	return frame{seq: l.Seq, data: data, z: newDeflated(data)}
}

// resetFrame tells a page to reload (see live's reset policy).
var resetFrame = encode(wireFrame{T: frameReset})

// probeFrame answers a page's probe: {"t":"probe"} both ways.
var probeFrame = frame{typ: frameProbe, data: encode(wireFrame{T: frameProbe})}

// scoreboard reads game's scoreboard as of seq at least.
func scoreboard(ctx context.Context, st Store, game string, seq int64) (store.Scoreboard, error) {
	b, err := st.ScoreboardAt(ctx, game, seq)
	if errors.Is(err, store.ErrNotFound) {
		// Nothing stored yet: the panel of a game that has not started.
		return store.Scoreboard{Game: store.Game{Name: game, Status: event.StatusWaiting}}, nil
	}
	return b, err
}

// stateFrame renders game's scoreboard panel, as of seq at least, into a
// state frame.
func stateFrame(ctx context.Context, st Store, game string, seq int64) (frame, error) {
	b, err := scoreboard(ctx, st, game, seq)
	if err != nil {
		return frame{}, err
	}
	return boardFrame(ctx, b, nil)
}

// boardFrame renders b's panel into a state frame, or with keep into a
// board frame whose kept rows are stubs (templates.ScoreboardPatch).
func boardFrame(ctx context.Context, b store.Scoreboard, keep []bool) (frame, error) {
	sb := bufpool.Get()
	defer bufpool.Put(sb)
	c, f := templates.Scoreboard(b), frame{}
	if keep != nil {
		c, f.typ = templates.ScoreboardPatch(b, keep), frameBoard
	}
	if err := c.Render(ctx, sb); err != nil {
		return frame{}, err
	}
	f.data = encodeHTML(wireFrame{T: f.kind()}, sb.Bytes())
	f.z = newDeflated(f.data)
	return f, nil
}
