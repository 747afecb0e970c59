package emojiname_test

import (
	"strings"
	"testing"

	"github.com/codemojex/feed/internal/emojiname"
)

func TestName(t *testing.T) {
	for _, tc := range []struct{ sym, want string }{
		{"🍍", "pineapple"},
		{"🥝", "kiwi fruit"},
		{"❤️", "red heart"},
		{"❤", "red heart"},    // without the variation selector
		{"👍🏽", "thumbs up"},   // skin tone ignored
		{"🇫🇷", "flag France"}, // a regional-indicator pair
		{"a", ""},
		{"", ""},
	} {
		if got := emojiname.Name(tc.sym); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.sym, got, tc.want)
		}
	}
}

func TestSpoken(t *testing.T) {
	got := emojiname.Spoken([]string{"🍍", "🍌", "\U0010FFFD", "<"})
	if want := "pineapple, banana, emoji, character"; got != want {
		t.Fatalf("Spoken = %q, want %q", got, want)
	}
	many := make([]string, emojiname.MaxSpoken+3)
	for i := range many {
		many[i] = "🥥"
	}
	if got := emojiname.Spoken(many); !strings.HasSuffix(got, "coconut, and 3 more") {
		t.Fatalf("Spoken of %d = %q", len(many), got)
	}
}
