package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
)

// Frame types of the websocket protocol (docs/contracts.md).
const (
	frameLine  = "line"
	frameState = "state"
	frameReset = "reset"
)

// wireFrame is the JSON shape of every websocket frame.
type wireFrame struct {
	T    string `json:"t"`
	Seq  int64  `json:"seq,omitempty"`
	ID   string `json:"id,omitempty"`
	HTML string `json:"html,omitempty"`
}

// encode marshals a frame without escaping HTML (the payload is HTML meant
// for the page; JSON string escaping alone keeps it a string).
func encode(f wireFrame) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// A struct of strings and an int cannot fail to encode.
	_ = enc.Encode(f)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// lineItem wraps a stored line body in its <li>, the same markup the page
// renders server-side, so the script inserts it as is.
func lineItem(l store.Line) string {
	return templates.LineItemHTML(l.Seq, l.EvtID, l.Kind, l.HTML)
}

func lineFrame(l store.Line) frame {
	return frame{seq: l.Seq, data: encode(wireFrame{T: frameLine, Seq: l.Seq, ID: l.EvtID, HTML: lineItem(l)})}
}

var resetFrame = encode(wireFrame{T: frameReset})

// stateFrame renders game's scoreboard panel into a state frame.
func stateFrame(ctx context.Context, st Store, game string) (frame, error) {
	b, err := st.Scoreboard(ctx, game)
	if errors.Is(err, store.ErrNotFound) {
		// Nothing stored yet: the panel of a game that has not started.
		b, err = store.Scoreboard{Game: store.Game{Name: game, Status: event.StatusWaiting}}, nil
	}
	if err != nil {
		return frame{}, err
	}
	var sb strings.Builder
	if err := templates.Scoreboard(b).Render(ctx, &sb); err != nil {
		return frame{}, err
	}
	return frame{data: encode(wireFrame{T: frameState, HTML: sb.String()})}, nil
}
