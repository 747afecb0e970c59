package templates

import (
	"context"
	"fmt"
	"html"
	"io"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/codemojex/feed/internal/bufpool"
	"github.com/codemojex/feed/internal/emojiname"
	"github.com/codemojex/feed/internal/event"
)

// RenderLine renders the body of one timeline line (see Line) for the
// store. It runs once per event on the renderer's hot path, so it renders
// into pooled buffers. payload is every entry field but id; at is the
// writer's clock (zero: no time shown). An error means rendering failed,
// which is retryable, not a verdict on the event.
func RenderLine(kind string, payload map[string]string, at time.Time) (string, error) {
	payload = isolatedFields(payload)
	b := bufpool.Get()
	defer bufpool.Put(b)
	if err := Line(isolated(kind), payload, at).Render(context.Background(), b); err != nil {
		return "", fmt.Errorf("templates: render %s line: %w", kind, err)
	}
	return b.String(), nil
}

// Bidi controls that open or close an isolate (Unicode's LRI, RLI, FSI and
// PDI).
const (
	lri, rli, fsi, pdi = '\u2066', '\u2067', '\u2068', '\u2069'
	isolateControls    = "\u2066\u2067\u2068\u2069"
)

// paragraphSeparators are the characters of Unicode's bidi class B that
// reach a browser's bidi algorithm (CR and LF are white space there, and
// collapse): each ends every isolate and embedding open before it, a
// <bdi>'s own too, and starts a new bidi paragraph.
const paragraphSeparators = "\u001c\u001d\u001e\u0085\u2029"

// isolated returns untrusted text for a <bdi> (or for an FSI…PDI pair): s
// with an FSI put in front of it for each PDI of s that closes no isolate
// s opened itself, and a PDI after it for each isolate s opens and does
// not close. A browser isolates a <bdi> as if its text sat between an FSI
// and a PDI, so a stray PDI in a player's name closed the <bdi>'s own
// isolate, and a right-to-left override after it flipped the rest of the
// line ("guessed", the pegs, the round); and in plain text (the
// scoreboard's summary) an isolate left open by the name took the PDI
// meant to close the name's, so an override before it flipped the rest
// (TestBrowserBidiUnclosedIsolateInSummary). A paragraph separator ends
// the <bdi>'s isolate too, so the text after one is put in an isolate of
// its own, balanced the same way: an override after a U+2029 in a name
// flipped the rest of the line (TestBrowserBidiParagraphSeparator).
// Every character of s is kept.
func isolated(s string) string {
	if !strings.ContainsAny(s, isolateControls+paragraphSeparators) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for first := true; ; first = false {
		part, rest, sep := s, "", false
		if i := strings.IndexAny(s, paragraphSeparators); i >= 0 {
			_, n := utf8.DecodeRuneInString(s[i:])
			part, rest, sep = s[:i+n], s[i+n:], true
		}
		open, stray := 0, 0
		for _, r := range part {
			switch r {
			case lri, rli, fsi:
				open++
			case pdi:
				if open > 0 {
					open--
				} else {
					stray++
				}
			}
		}
		if !first {
			// Stands for the <bdi>'s isolate, which the separator ended.
			b.WriteRune(fsi)
			open++
		}
		b.WriteString(strings.Repeat(string(fsi), stray))
		b.WriteString(part)
		if !sep {
			// The separator ends what is open before it; the last part's
			// isolates are closed here.
			b.WriteString(strings.Repeat(string(pdi), open))
			return b.String()
		}
		s = rest
	}
}

// isolatedFields is payload with every value isolated: payload itself
// unless a value holds an isolate control or a paragraph separator (a line
// renders every value in a <bdi>, or as a number).
func isolatedFields(payload map[string]string) map[string]string {
	var out map[string]string
	for k, v := range payload {
		if w := isolated(v); w != v {
			if out == nil {
				out = maps.Clone(payload)
			}
			out[k] = w
		}
	}
	if out == nil {
		return payload
	}
	return out
}

// LineItemHTML wraps a stored line body as the list item the page and the
// websocket frames carry: <li id="evt_…" data-seq="N" data-kind="…"
// class="line line-KIND">body</li>. evtID and kind are escaped (kind is
// untrusted: an unknown kind is stored as the writer sent it) and only
// known kinds become a CSS class; body is the store's own rendered HTML.
func LineItemHTML(seq int64, evtID, kind, body string) string {
	var b strings.Builder
	b.Grow(len(body) + len(evtID) + len(kind) + 96)
	WriteLineItem(&b, seq, evtID, kind, body)
	return b.String()
}

// WriteLineItem writes what LineItemHTML returns to w: the live path wraps
// lines into pooled buffers, not into a string per line.
func WriteLineItem(w io.StringWriter, seq int64, evtID, kind, body string) {
	w.WriteString(`<li id="`)
	w.WriteString(html.EscapeString(evtID))
	w.WriteString(`" data-seq="`)
	w.WriteString(strconv.FormatInt(seq, 10))
	w.WriteString(`" data-kind="`)
	w.WriteString(html.EscapeString(kind))
	w.WriteString(`" class="line line-`)
	w.WriteString(KindClass(kind))
	w.WriteString(`">`)
	w.WriteString(body)
	w.WriteString(`</li>`)
}

// KindClass is the CSS class suffix of a kind: the kind itself when this
// version knows it, "unknown" otherwise (never untrusted text in a class).
func KindClass(kind string) string {
	if event.Known(kind) {
		return kind
	}
	return "unknown"
}

// maxPegs bounds the pegs drawn for one guess (codes are at most 12 long).
const maxPegs = 12

// pegCount parses an exact/near count, clamped to 0..maxPegs.
func pegCount(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return min(n, maxPegs)
}

// pegsHTML draws the pegs of a guess: one green per exact, one white per
// near, or ✖ when there are none. Only counts reach it, never text.
func pegsHTML(exact, near string) string {
	e, n := pegCount(exact), pegCount(near)
	if e == 0 && n == 0 {
		return `<span class="peg-none">✖</span>`
	}
	return `<span class="peg-exact">` + strings.Repeat("🟢", e) + `</span><span class="peg-near">` +
		strings.Repeat("⚪", n) + `</span>`
}

// symbolsHTML renders the symbols of an emoji string (see symbols) one
// <span class="sym"> each, escaped: the text is untrusted. A line splits
// its string once for this and for emojiNames.
func symbolsHTML(syms []string) string {
	n := 0
	for _, sym := range syms {
		n += len(sym) + 25
	}
	var b strings.Builder
	b.Grow(n)
	for _, sym := range syms {
		b.WriteString(`<span class="sym">`)
		b.WriteString(html.EscapeString(sym))
		b.WriteString(`</span>`)
	}
	return b.String()
}

// spoken is the words a screen reader says for an emoji string: the names
// of its symbols, comma-separated ("pineapple, banana, kiwi fruit").
func spoken(s string) string { return emojiNames(symbols(s)) }

// avatarSaid is the words a screen reader hears for a player's avatar,
// after the name: ", avatar: fox", or "" for none.
func avatarSaid(avatar string) string {
	if avatar == "" {
		return ""
	}
	return ", avatar: " + spoken(avatar)
}

// emojiNames is spoken for a string already split into symbols.
func emojiNames(syms []string) string { return emojiname.Spoken(syms) }

// pegsText is the words for the pegs, for the tooltip and screen readers.
func pegsText(exact, near string) string {
	return strconv.Itoa(pegCount(exact)) + " exact, " + strconv.Itoa(pegCount(near)) + " near"
}

// num passes a small non-negative integer through and shows anything else
// as "?": numeric fields are validated upstream, and if one is not, no
// untrusted text rides along in a place meant for a number.
func num(s string) string {
	if s == "" || len(s) > 9 {
		return "?"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "?"
		}
	}
	return s
}

// plural writes "1 round" or "3 rounds" (see num for non-numbers).
func plural(n, one, many string) string {
	n = num(n)
	if n == "1" {
		return n + " " + one
	}
	return n + " " + many
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// symbols splits an emoji string into what players see as one symbol:
// event.SplitEmoji's clusters, with regional-indicator pairs (flags) and
// combining marks (keycaps, tag sequences) kept with their symbol.
func symbols(s string) []string {
	parts := event.SplitEmoji(s)
	out := parts[:0] // in place: a symbol only ever joins the one before it
	for _, p := range parts {
		r, _ := utf8.DecodeRuneInString(p)
		if n := len(out); n > 0 {
			last := out[n-1]
			lr, _ := utf8.DecodeLastRuneInString(last)
			switch {
			case isRegional(r) && isRegional(lr) && utf8.RuneCountInString(last) == 1:
				out[n-1] += p // the second half of a flag
				continue
			case r == 0x20E3, r >= 0xE0020 && r <= 0xE007F:
				out[n-1] += p // keycap, or a tag of a subdivision flag
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

func isRegional(r rune) bool { return r >= 0x1F1E6 && r <= 0x1F1FF }

// lineTimes are the three renderings of a writer's time in a line.
type lineTimes struct {
	unix                   int64
	datetime, title, clock string
}

// lastTime caches the renderings of the latest second seen: at a high event
// rate nearly every line shares its second with the one before, and
// formatting the time three times showed in profiles of RenderLine
// (docs/benchmarks.md, notes from profiles).
var lastTime atomic.Pointer[lineTimes]

func timeStrings(at time.Time) *lineTimes {
	at = at.UTC()
	sec := at.Unix()
	if t := lastTime.Load(); t != nil && t.unix == sec {
		return t
	}
	t := &lineTimes{
		unix:     sec,
		datetime: at.Format(time.RFC3339),
		title:    at.Format("2006-01-02 15:04:05 UTC"),
		clock:    at.Format("15:04:05"),
	}
	lastTime.Store(t)
	return t
}
