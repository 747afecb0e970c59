package event_test

import (
	"testing"

	"github.com/codemojex/feed/internal/event"
)

func TestComparePos(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1-0", "1-0", 0},
		{"1-0", "2-0", -1},
		{"10-0", "9-5", 1}, // numeric, not lexical
		{"5-2", "5-10", -1},
		{"0-0", "1796056894966-9", -1},
	}
	for _, tt := range tests {
		if got := event.ComparePos(tt.a, tt.b); got != tt.want {
			t.Errorf("ComparePos(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
