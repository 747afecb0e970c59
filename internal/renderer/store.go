package renderer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
)

// position is the consumer's Config.Position: how far the store file has
// committed the game of stream.
func (m *Main) position(ctx context.Context, stream string) (string, error) {
	game, ok := event.GameOfKey(stream)
	if !ok {
		return "", nil
	}
	return m.db.Position(ctx, game)
}

// watchFile checks every FileCheck that the store path still names the
// file opened. A deleted or replaced file (a lost volume, an operator's rm,
// a backup copied over it) is a store nothing will read again: the
// renderer stops consuming for good and /readyz says so until a restart,
// which opens the file now at the path and catches it up from the streams.
func (m *Main) watchFile(ctx context.Context, log *slog.Logger) {
	every := m.Config.FileCheck
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := m.db.CheckFile()
		if err == nil || !errors.Is(err, store.ErrReplaced) {
			continue
		}
		m.mu.Lock()
		m.storeLost = err
		m.mu.Unlock()
		log.Error("store file deleted or replaced under the renderer; consuming stopped, restart it", "err", err)
		m.addNote(fmt.Sprintf("store file deleted or replaced: %v; consuming stopped until a restart", err))
		if m.consumer != nil {
			m.consumer.Close()
		}
		return
	}
}

func (m *Main) addNote(text string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.notes = append(m.notes, feed.Note{At: time.Now().UTC(), Text: text})
}

func (m *Main) allNotes() []feed.Note {
	m.mu.Lock()
	out := append([]feed.Note(nil), m.notes...)
	m.mu.Unlock()
	if m.consumer != nil {
		out = append(out, m.consumer.Notes()...)
	}
	return out
}
