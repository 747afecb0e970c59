// Package untrusted makes text that came from outside (stream entries,
// request headers and paths, player text) safe to print: on an operator's
// terminal and in log lines. Control characters, bidirectional overrides
// and invalid UTF-8 are written as Go escapes (\x1b, \n, \u202e), so an
// ESC byte is never printed raw, and log values are cut to a bound.
package untrusted

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLog is how many bytes of an untrusted value a log line keeps.
const MaxLog = 256

// Escape returns s with every control character, format character (such
// as U+202E, which reverses the text after it) and invalid byte written as
// a Go escape; a backslash is doubled so the result reads back
// unambiguously. Printable text, emoji included, is kept as it is.
func Escape(s string) string {
	if safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case needsEscape(r):
			// QuoteRune gives '\x1b', '\n', '\u202e': drop its quotes.
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func safe(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r == '\\' || needsEscape(r) {
			return false
		}
	}
	return true
}

func needsEscape(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// Text is Escape bounded for a log line: at most MaxLog bytes of s are
// kept (cut on a rune boundary) and the cut says how much was left out.
func Text(s string) string {
	if len(s) <= MaxLog {
		return Escape(s)
	}
	cut := MaxLog
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return Escape(s[:cut]) + fmt.Sprintf("…(%d more bytes)", len(s)-cut)
}

// Attr is the slog attribute of an untrusted value: every log call site
// that logs text from an entry or a request goes through it.
func Attr(key, s string) slog.Attr { return slog.String(key, Text(s)) }

// Err is the slog attribute of an error whose message may quote untrusted
// text (a decoder's reason, a bad header); a nil error logs as "<nil>".
func Err(err error) slog.Attr {
	if err == nil {
		return slog.String("err", "<nil>")
	}
	return slog.String("err", Text(err.Error()))
}
