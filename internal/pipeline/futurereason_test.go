package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/pipeline"
)

// TestFutureIDReasonSaysHowFar: a future id's reason (its dead letter's
// dead_reason) says how far ahead the EVT id is, also past the 292 years
// a time.Duration holds: an id minted in ULID's last millisecond (the
// year 10889) was said to be 2562047h47m16.854775807s ahead, the
// Duration's cap, whatever its stream entry's time.
func TestFutureIDReasonSaysHowFar(t *testing.T) {
	p, _ := MustOpenPipeline(t)
	s := event.StreamKey("far")
	now := time.Now()
	posMs := now.UnixMilli()
	tests := []struct {
		name, id string
		hours    int64
	}{
		{"a year ahead", event.NewMinter(1).Next(now.Add(8760 * time.Hour)), 8760},
		{"ULID's last id", "evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ", (int64(ulid.MaxTime()) - posMs) / 3_600_000},
		{"the year 3000", event.NewMinter(2).Next(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)), (time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() - posMs) / 3_600_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := msg(s, "chat", "player", "ada", "text", "hi")
			m.ID, m.Position = tt.id, fmt.Sprintf("%d-0", posMs)
			v := p.Handle(context.Background(), []feed.Message{m})
			if !errors.Is(v[0], pipeline.ErrFutureID) {
				t.Fatalf("verdict %v; want a future id", v[0])
			}
			if want := fmt.Sprintf("is %dh", tt.hours); !strings.Contains(v[0].Error(), want) {
				t.Errorf("reason %q; want it to say %q", v[0], want)
			}
		})
	}
}
