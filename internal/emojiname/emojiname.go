// Package emojiname gives emoji their spoken names (Unicode's CLDR short
// names, "pineapple", "kiwi fruit"), so that a code or a guess made of emoji
// can be read aloud by a screen reader as words.
package emojiname

import (
	_ "embed"
	"strconv"
	"strings"
	"sync"
)

//go:embed names.txt
var namesTxt string

var (
	once  sync.Once
	names map[string]string
)

// strip removes what changes an emoji's look but not its name: variation
// selectors and skin-tone modifiers.
var strip = strings.NewReplacer("\uFE0F", "", "\uFE0E", "",
	"\U0001F3FB", "", "\U0001F3FC", "", "\U0001F3FD", "", "\U0001F3FE", "", "\U0001F3FF", "")

func load() {
	names = make(map[string]string, 2048)
	for _, line := range strings.Split(namesTxt, "\n") {
		if line == "" || line[0] == '#' && !strings.Contains(line, "\t") {
			continue
		}
		sym, name, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		names[sym] = name
		if k := strip.Replace(sym); k != sym {
			if _, taken := names[k]; !taken {
				names[k] = name
			}
		}
	}
}

// Name returns the short name of one emoji symbol (a grapheme cluster such
// as a flag, a keycap or a ZWJ sequence), or "" when it is not an emoji this
// table knows. Skin tones and variation selectors are ignored.
func Name(sym string) string {
	once.Do(load)
	if n, ok := names[sym]; ok {
		return n
	}
	return names[strip.Replace(sym)]
}

// MaxSpoken is how many symbols Spoken names; the rest are counted.
const MaxSpoken = 16

// Spoken returns the words for a sequence of symbols, comma-separated. It
// only ever returns names from the table and fixed words, never the input:
// an emoji the table does not know is "emoji", anything else "character",
// and past MaxSpoken symbols it says how many more there are. So a label
// built from untrusted text carries none of it and stays short.
func Spoken(symbols []string) string {
	var b strings.Builder
	for i, s := range symbols {
		if i == MaxSpoken {
			b.WriteString(", and " + strconv.Itoa(len(symbols)-i) + " more")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		switch n := Name(s); {
		case n != "":
			b.WriteString(n)
		case isEmojiish(s):
			b.WriteString("emoji")
		default:
			b.WriteString("character")
		}
	}
	return b.String()
}

// isEmojiish reports whether s starts beyond the Basic Multilingual Plane's
// letters: a symbol the table does not know is still named "emoji" rather
// than read out as raw code points.
func isEmojiish(s string) bool {
	for _, r := range s {
		return r >= 0x2000
	}
	return false
}
