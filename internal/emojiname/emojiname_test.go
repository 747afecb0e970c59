package emojiname_test

import (
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
	got := emojiname.Spoken([]string{"🍍", "🍌", "\U0010FFFD", "x"})
	if want := "pineapple, banana, emoji, x"; got != want {
		t.Fatalf("Spoken = %q, want %q", got, want)
	}
}
