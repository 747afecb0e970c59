package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/templates"
)

// publisher turns a Writer into the bare broadcaster's feed: the frames the
// renderer would send for each event, rendered and encoded by the writer,
// PUBLISHed on BroadcastChannel.
type publisher struct {
	seq   int64
	state [][]byte // per game: a scoreboard state frame of a game in play
}

// NewPublisher returns a Writer of games that, instead of XADDing events,
// publishes the frames the renderer would send for them to the bare
// broadcaster: a line frame per event and, after every event that can move
// the scoreboard (all but chat, as the renderer did before it coalesced
// them), a state frame of a scoreboard in play. Rendering and encoding
// happen before the send time is noted: the baseline gets its frames ready
// made.
func NewPublisher(rdb redis.UniversalClient, m *event.Minter, games []string) *Writer {
	w := NewWriter(rdb, m, games)
	w.pub = &publisher{state: make([][]byte, len(games))}
	for i, g := range games {
		w.pub.state[i] = encodeFrame(frameJSON{T: "state", HTML: boardHTML(g)})
	}
	return w
}

// frameJSON is the renderer's websocket frame (docs/contracts.md).
type frameJSON struct {
	T    string `json:"t"`
	Seq  int64  `json:"seq,omitempty"`
	ID   string `json:"id,omitempty"`
	HTML string `json:"html,omitempty"`
}

func encodeFrame(f frameJSON) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(f)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// boardHTML renders the scoreboard of a game in its second round with four
// players, about the size of the benchmarks' real ones.
func boardHTML(game string) string {
	b := store.Scoreboard{Game: store.Game{Name: game, Title: game, Status: "playing", Round: 2, Rounds: 5, CodeLen: 4, Palette: "🍎🍌🍇🍓🍒🥝"}}
	for i, name := range []string{"ada", "brian", "chloé", "dmitri"} {
		b.Players = append(b.Players, store.Player{Name: name, Avatar: "🦊", Present: true, Score: int64(10 * (4 - i)),
			Wins: 1, Guesses: int64(7 + i), LastGuess: "🍎🍌🍇🍓", LastExact: 2, LastNear: 1})
	}
	var sb strings.Builder
	_ = templates.Scoreboard(b).Render(context.Background(), &sb)
	return sb.String()
}

// publish renders each item's frames, notes the send time and publishes
// them in one pipeline.
func (w *Writer) publish(ctx context.Context, idx []int, items []gamesim.Item, at time.Time) error {
	msgs := make([]string, 0, 2*len(items))
	for j, it := range items {
		body, err := templates.RenderLine(it.Event.Kind, it.Event.Payload(at), at)
		if err != nil {
			return fmt.Errorf("bench: render: %w", err)
		}
		w.pub.seq++
		f := encodeFrame(frameJSON{T: "line", Seq: w.pub.seq, ID: it.ID,
			HTML: templates.LineItemHTML(w.pub.seq, it.ID, it.Event.Kind, body)})
		msgs = append(msgs, it.Game+"\x00"+string(f))
		if it.Event.Kind != event.KindChat && event.Known(it.Event.Kind) {
			msgs = append(msgs, it.Game+"\x00"+string(w.pub.state[idx[j]]))
		}
	}
	now := time.Now().UnixNano()
	w.mu.Lock()
	for j, it := range items {
		w.sent[it.ID] = sentRec{at: now, game: idx[j]}
	}
	w.mu.Unlock()
	pipe := w.rdb.Pipeline()
	for _, m := range msgs {
		pipe.Publish(ctx, BroadcastChannel, m)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("bench: publish: %w", err)
	}
	return nil
}
