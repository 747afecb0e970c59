package templates_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/templates"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

var at = time.Date(2026, 11, 29, 18, 55, 51, 0, time.UTC)

// lineCases is one line per kind (and the variants players see).
var lineCases = []struct {
	name string
	kind string
	f    map[string]string
	at   time.Time
}{
	{"game_started", event.KindGameStarted, map[string]string{"title": "Friday night", "rounds": "3", "code_length": "4", "palette": "🍎🍌🍇🍓🍒🥝"}, at},
	{"player_joined", event.KindPlayerJoined, map[string]string{"player": "ann", "avatar": "🦊"}, at},
	{"player_left", event.KindPlayerLeft, map[string]string{"player": "ann"}, at},
	{"round_started", event.KindRoundStarted, map[string]string{"round": "2"}, at},
	{"guess", event.KindGuess, map[string]string{"player": "bob", "round": "2", "guess": "🍎🍌🍇🍓", "exact": "2", "near": "1"}, at},
	{"guess_miss", event.KindGuess, map[string]string{"player": "bob", "round": "2", "guess": "👩‍👩‍👧🇫🇷👍🏽🍓", "exact": "0", "near": "0"}, at},
	{"round_won", event.KindRoundWon, map[string]string{"player": "ann", "round": "2", "code": "🍇🍎🍌🍓", "guesses": "7", "points": "40"}, at},
	{"round_won_first_try", event.KindRoundWon, map[string]string{"player": "ann", "round": "1", "code": "🍇🍎🍌🍓", "guesses": "1", "points": "1"}, at},
	{"chat", event.KindChat, map[string]string{"player": "bob", "text": "so close!"}, at},
	{"game_over", event.KindGameOver, map[string]string{"winner": "ann"}, at},
	{"game_over_no_winner", event.KindGameOver, map[string]string{"winner": ""}, at},
	{"unknown_kind", "power_up", map[string]string{"player": "ann"}, at},
	{"no_time", event.KindChat, map[string]string{"player": "bob", "text": "when?"}, time.Time{}},
}

func TestLineGolden(t *testing.T) {
	for _, tc := range lineCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := templates.RenderLine(tc.kind, tc.f, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			item := templates.LineItemHTML(42, "evt_01KB2Z1C7Y0000000000000000", tc.kind, got)
			golden(t, "line_"+tc.name, item+"\n")
		})
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./templates -run %s -update)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n got: %s\nwant: %s", t.Name(), path, got, want)
	}
}

// Content each line must put in front of players: a regression that drops
// the pegs or the points fails here even if someone re-blesses the goldens.
func TestLineSaysWhatHappened(t *testing.T) {
	want := map[string][]string{
		"game_started":        {"Friday night", "3 rounds", "code of 4", `class="sym">🥝<`},
		"player_joined":       {"ann", "🦊", "joined"},
		"player_left":         {"ann", "left"},
		"round_started":       {"Round", ">2<"},
		"guess":               {"bob", "🟢🟢", "⚪", "2 exact, 1 near", `class="peg-exact"`, `class="peg-near"`, "round 2"},
		"guess_miss":          {"0 exact, 0 near", "peg-none", `class="sym">👩‍👩‍👧<`, `class="sym">🇫🇷<`},
		"round_won":           {"ann", "cracked the code", "7 guesses", "+40 points", "round 2"},
		"round_won_first_try": {"1 guess ", "+1 point<"},
		"chat":                {"bob", `<bdi class="chat-text">so close!</bdi>`},
		"game_over":           {"Game over", "ann", "wins"},
		"game_over_no_winner": {"no winner"},
		"unknown_kind":        {"unknown event kind", "power_up"},
	}
	for _, tc := range lineCases {
		got, err := templates.RenderLine(tc.kind, tc.f, tc.at)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want[tc.name] {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q missing from %s", tc.name, w, got)
			}
		}
		if strings.Contains(got, `<bdi class="who">`) != (tc.kind != event.KindRoundStarted && tc.kind != event.KindGameStarted &&
			tc.name != "game_over_no_winner" && tc.kind != "power_up") {
			t.Errorf("%s: player name not in <bdi class=\"who\">: %s", tc.name, got)
		}
		timeTag := `<time datetime="2026-11-29T18:55:51Z" title="2026-11-29 18:55:51 UTC">18:55:51</time>`
		if strings.Contains(got, timeTag) != !tc.at.IsZero() {
			t.Errorf("%s: time tag presence wrong: %s", tc.name, got)
		}
	}
}

// hostile values, each tried in every field of every kind.
var hostile = []string{
	`<script>alert(1)</script>`,
	`"onmouseover=alert(1) x="`,
	`' onmouseover='alert(1)`,
	`javascript:alert(1)`,
	`<a href="javascript:alert(1)">click</a>`,
	`<img src=x onerror=alert(1)>`,
	"\u202eevil\u202c name",
	"</bdi></span></li><li>",
	strings.Repeat("A", 10_000) + "<b>",
	"&lt;already-escaped&gt;",
	"x\u2069\u202eevil", // a PDI first: it would close the <bdi>'s own isolate
}

var allowedTags = map[string]bool{"time": true, "span": true, "bdi": true, "q": true, "strong": true, "code": true, "li": true}

// role and aria-label: emoji groups are read by their names (never the
// untrusted text itself: see emojiname.Spoken).
var allowedAttrs = map[string]bool{"class": true, "datetime": true, "title": true, "aria-hidden": true, "role": true, "aria-label": true,
	"id": true, "data-seq": true, "data-kind": true}

// TestLineHostileText: whatever a writer puts in any field (names, chat,
// avatars, emoji, numbers, the kind itself), the line has only our tags
// and attributes, no attribute carries the text, every text that is shown
// is shown whole and exact, and bidi overrides sit inside a <bdi>.
func TestLineHostileText(t *testing.T) {
	kinds := []string{event.KindGameStarted, event.KindPlayerJoined, event.KindPlayerLeft, event.KindRoundStarted,
		event.KindGuess, event.KindRoundWon, event.KindChat, event.KindGameOver, "power_up"}
	fields := []string{"title", "rounds", "code_length", "palette", "player", "avatar", "round", "guess",
		"exact", "near", "code", "guesses", "points", "text", "winner"}
	for _, kind := range kinds {
		for _, field := range fields {
			for _, h := range hostile {
				f := map[string]string{}
				for _, k := range fields {
					f[k] = "1"
				}
				f[field] = h
				body, err := templates.RenderLine(kind, f, at)
				if err != nil {
					t.Fatal(err)
				}
				checkMarkup(t, kind+"/"+field, templates.LineItemHTML(1, "evt_X", kind, body), h, shownAs(kind, field))
			}
		}
	}
	// The kind name itself, unknown to this version.
	for _, h := range hostile {
		body, err := templates.RenderLine(h, map[string]string{"player": "ann"}, at)
		if err != nil {
			t.Fatal(err)
		}
		item := templates.LineItemHTML(1, "evt_X", h, body)
		checkMarkup(t, "kind", item, h, true)
		if !strings.Contains(item, `class="line line-unknown"`) {
			t.Errorf("kind %.40q: class not neutral: %.200s", h, item)
		}
	}
}

// TestPlayerLeftShowsNoAvatar: a line shows no field its kind does not
// list in docs/contracts.md (a writer may add more; they stay in the
// stored payload): each kind rendered with every field set to a marker of
// its own shows none of the others' markers. A player_left draws the
// waving hand whatever it carries. Nothing checks an avatar there (a
// join's must be one emoji), and until 7 Dec 2026 its text, up to the
// entry's 8 KiB, was drawn in the hand's place: a line within the line.
func TestPlayerLeftShowsNoAvatar(t *testing.T) {
	listed := map[string][]string{
		event.KindGameStarted:  {"title", "rounds", "code_length", "palette"},
		event.KindPlayerJoined: {"player", "avatar"},
		event.KindPlayerLeft:   {"player"},
		event.KindRoundStarted: {"round"},
		event.KindGuess:        {"player", "round", "guess", "exact", "near"},
		event.KindRoundWon:     {"player", "round", "code", "guesses", "points"},
		event.KindChat:         {"player", "text"},
		event.KindGameOver:     {"winner"},
	}
	fields := []string{"title", "rounds", "code_length", "palette", "player", "avatar", "round", "guess",
		"exact", "near", "code", "guesses", "points", "text", "winner"}
	for kind, own := range listed {
		f := map[string]string{}
		for _, k := range fields {
			f[k] = "«" + k + "»"
		}
		body, err := templates.RenderLine(kind, f, at)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range fields {
			if !slices.Contains(own, k) && strings.Contains(body, f[k]) {
				t.Errorf("%s shows the field %s, which it does not list: %s", kind, k, body)
			}
		}
	}
	for _, avatar := range []string{"", "🦊", "🏆 mallory cracked the code in 1 guess", "\u202e"} {
		body, err := templates.RenderLine(event.KindPlayerLeft, map[string]string{"player": "ann", "avatar": avatar}, at)
		if err != nil {
			t.Fatal(err)
		}
		if want := `<bdi class="emoji avatar" aria-hidden="true">👋</bdi>`; !strings.Contains(body, want) {
			t.Errorf("player_left with avatar %q: %s; want %s", avatar, body, want)
		}
	}
}

// shownAs reports whether field is shown as text in a line of kind.
func shownAs(kind, field string) bool {
	shown := map[string][]string{
		event.KindGameStarted:  {"title", "palette"},
		event.KindPlayerJoined: {"player", "avatar"},
		event.KindPlayerLeft:   {"player"},
		event.KindGuess:        {"player", "guess"},
		event.KindRoundWon:     {"player", "code"},
		event.KindChat:         {"player", "text"},
		event.KindGameOver:     {"winner"},
	}
	for _, f := range shown[kind] {
		if f == field {
			return true
		}
	}
	return false
}

// checkMarkup parses item as HTML and checks it against the rules above.
func checkMarkup(t *testing.T, where, item, h string, shown bool) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(item))
	var text strings.Builder
	var stack []string
	bdiDepth := 0
	var isolates []int // per open <bdi>: isolates its text opened (LRI, RLI, FSI) less those closed (PDI)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if shown && !strings.Contains(text.String(), h) {
				t.Errorf("%s: hostile text %.60q not shown whole; text was %.200q", where, h, text.String())
			}
			if len(stack) != 0 {
				t.Errorf("%s: unclosed tags %v", where, stack)
			}
			return
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			if !allowedTags[tok.Data] {
				t.Errorf("%s: injected tag <%s> from %.60q", where, tok.Data, h)
			}
			for _, a := range tok.Attr {
				if !allowedAttrs[a.Key] {
					t.Errorf("%s: injected attribute %s=%q from %.60q", where, a.Key, a.Val, h)
				}
				if a.Key != "data-kind" && (strings.Contains(a.Val, "javascript:") || strings.Contains(a.Val, "<") ||
					strings.Contains(a.Val, "onmouseover")) {
					t.Errorf("%s: attribute %s carries untrusted text %.60q", where, a.Key, a.Val)
				}
			}
			if tt == html.StartTagToken {
				stack = append(stack, tok.Data)
				if tok.Data == "bdi" {
					bdiDepth++
					isolates = append(isolates, 0)
				}
			}
		case html.EndTagToken:
			tok := z.Token()
			if len(stack) == 0 || stack[len(stack)-1] != tok.Data {
				t.Errorf("%s: stray </%s> (open: %v) from %.60q", where, tok.Data, stack, h)
				continue
			}
			stack = stack[:len(stack)-1]
			if tok.Data == "bdi" {
				bdiDepth--
				isolates = isolates[:len(isolates)-1]
			}
		case html.TextToken:
			s := string(z.Text())
			if strings.ContainsRune(s, '\u202e') && bdiDepth == 0 {
				t.Errorf("%s: right-to-left override outside <bdi>: %q", where, s)
			}
			// A browser isolates a <bdi> as if between an FSI and a PDI:
			// a PDI of the text that closes none of its own isolates
			// closes the <bdi>'s, and what follows it leaks out.
			for _, r := range s {
				if len(isolates) == 0 {
					break
				}
				switch r {
				case '\u2066', '\u2067', '\u2068':
					isolates[len(isolates)-1]++
				case '\u2069':
					if isolates[len(isolates)-1]--; isolates[len(isolates)-1] < 0 {
						t.Errorf("%s: a PDI closes its <bdi>'s isolate: %q", where, s)
						isolates[len(isolates)-1] = 0
					}
				}
			}
			text.WriteString(s)
		}
	}
}

func TestLineItemHTMLEscapesAttributes(t *testing.T) {
	tests := []struct {
		evtID, kind, wantClass string
	}{
		{"evt_01KB2Z1C7Y0000000000000000", event.KindGuess, "line line-guess"},
		{`evt_"><script>x</script>`, `chat" onclick="x`, "line line-unknown"},
		{"evt_ok", "\u202e<b>", "line line-unknown"},
	}
	for _, tc := range tests {
		item := templates.LineItemHTML(7, tc.evtID, tc.kind, "<span>body</span>")
		z := html.NewTokenizer(strings.NewReader(item))
		if z.Next() != html.StartTagToken {
			t.Fatalf("%q: no start tag", item)
		}
		tok := z.Token()
		got := map[string]string{}
		for _, a := range tok.Attr {
			got[a.Key] = a.Val
		}
		if tok.Data != "li" || len(tok.Attr) != 4 || got["id"] != tc.evtID || got["data-seq"] != "7" ||
			got["data-kind"] != tc.kind || got["class"] != tc.wantClass {
			t.Errorf("%s: parsed as <%s %v>", item, tok.Data, tok.Attr)
		}
		if !strings.HasSuffix(item, "<span>body</span></li>") {
			t.Errorf("%s: body not kept as is", item)
		}
	}
}

func TestLineItemComponent(t *testing.T) {
	var b strings.Builder
	if err := templates.LineItem(3, "evt_A", "chat", "x").Render(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	if b.String() != templates.LineItemHTML(3, "evt_A", "chat", "x") {
		t.Errorf("LineItem = %q", b.String())
	}
}

func BenchmarkRenderLine(b *testing.B) {
	f := map[string]string{"kind": "guess", "at": at.Format(time.RFC3339), "player": "bob", "round": "2",
		"guess": "🍎🍌🍇🍓", "exact": "2", "near": "1"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := templates.RenderLine(event.KindGuess, f, at); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkLineItemHTML(b *testing.B) {
	body, _ := templates.RenderLine(event.KindChat, map[string]string{"player": "bob", "text": "hello"}, at)
	b.ReportAllocs()
	for b.Loop() {
		templates.LineItemHTML(123456, "evt_01KB2Z1C7Y0000000000000000", event.KindChat, body)
	}
}

func TestLineTime(t *testing.T) {
	tests := []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), `<time datetime="2026-01-02T03:04:05Z" title="2026-01-02 03:04:05 UTC">03:04:05</time> `},
		{time.Date(2026, 1, 2, 3, 4, 5, 999_000_000, time.UTC), `<time datetime="2026-01-02T03:04:05Z" title="2026-01-02 03:04:05 UTC">03:04:05</time> `},
		{time.Date(2026, 1, 2, 4, 4, 5, 0, time.FixedZone("CET", 3600)), `<time datetime="2026-01-02T03:04:05Z" title="2026-01-02 03:04:05 UTC">03:04:05</time> `},
		{time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), `<time datetime="2026-01-02T03:04:06Z" title="2026-01-02 03:04:06 UTC">03:04:06</time> `},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), `<time datetime="2026-01-02T03:04:05Z" title="2026-01-02 03:04:05 UTC">03:04:05</time> `},
		{time.Time{}, `<span class="emoji icon"`},
	}
	for _, tc := range tests {
		got, err := templates.RenderLine(event.KindRoundStarted, map[string]string{"round": "1"}, tc.at)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("at %v: got %s, want prefix %s", tc.at, got, tc.want)
		}
	}
}

// TestLineSpoken: a screen reader hears a guess as the emoji's names and the
// score in words, and not the peg drawing.
func TestLineSpoken(t *testing.T) {
	body, err := templates.RenderLine(event.KindGuess, map[string]string{
		"player": "ann", "round": "1", "guess": "🍍🍌🥝🥥", "exact": "2", "near": "1"}, at)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`role="img" aria-label="pineapple, banana, kiwi fruit, coconut"`,
		`<span class="pegs" aria-hidden="true"`,
		`<span class="peg-text">2 exact, 1 near</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("%s missing from %s", want, body)
		}
	}
}

// TestLineNumbersAsValidated: a number that event.Validate accepts is
// shown as it was written, never as "?" (which is for a number that
// bypassed validation). "+5" passed strconv.Atoi, and so validation, but
// the line showed "? rounds".
func TestLineNumbersAsValidated(t *testing.T) {
	entries := []struct {
		kind  string
		f     map[string]string
		field []string
	}{
		{event.KindGameStarted, map[string]string{"title": "F", "rounds": "3", "code_length": "4", "palette": "🍎🍌"}, []string{"rounds", "code_length"}},
		{event.KindRoundStarted, map[string]string{"round": "2"}, []string{"round"}},
		{event.KindGuess, map[string]string{"player": "bob", "round": "2", "guess": "🍎", "exact": "1", "near": "1"}, []string{"round"}},
		{event.KindRoundWon, map[string]string{"player": "ann", "round": "2", "code": "🍎", "guesses": "7", "points": "40"}, []string{"round", "guesses", "points"}},
	}
	values := []string{"+5", "-0", "+0", "07", "0000000001", "0", "1", "5", "12", "100", "1000000", " 5", "5 ", "٥", "1_0", "0x5"}
	for _, e := range entries {
		for _, field := range e.field {
			for _, v := range values {
				f := map[string]string{}
				for k, x := range e.f {
					f[k] = x
				}
				f[field] = v
				if event.Validate(e.kind, f) != nil {
					continue
				}
				body, err := templates.RenderLine(e.kind, f, at)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(body, "?") {
					t.Errorf("%s %s=%q is valid but its line shows \"?\": %.300s", e.kind, field, v, body)
				}
			}
		}
	}
}

// FuzzRenderLine holds RenderLine to TestLineHostileText's rules for any
// text a decoded entry may carry (valid UTF-8) in any field of any kind,
// the kind itself included (a known kind's text once Validate took it):
// only our tags and attributes, every shown
// value whole (as an HTML parser reads it back: CR LF and CR as LF, the
// isolate controls RenderLine adds left aside), overrides and isolates
// kept inside their <bdi>. TestLineHostileText tries a fixed list; this
// tries what the list did not think of (separators, stray PDIs, NULs,
// entities, long runs of marks).
func FuzzRenderLine(f *testing.F) {
	kinds := []string{event.KindGameStarted, event.KindPlayerJoined, event.KindPlayerLeft, event.KindRoundStarted,
		event.KindGuess, event.KindRoundWon, event.KindChat, event.KindGameOver}
	fields := []string{"title", "rounds", "code_length", "palette", "player", "avatar", "round", "guess",
		"exact", "near", "code", "guesses", "points", "text", "winner"}
	for i, h := range hostile {
		f.Add(uint8(i), uint8(i*3), h, "")
	}
	f.Add(uint8(6), uint8(13), "a\u2029\u202eb\u2069\u2067", "")
	f.Add(uint8(4), uint8(4), "x\r\ny\rz\x00&amp;", "")
	f.Add(uint8(8), uint8(0), "ok", "\u202e<b>&#x202e;")
	f.Fuzz(func(t *testing.T, k, fi uint8, value, kind string) {
		if !utf8.ValidString(value) || !utf8.ValidString(kind) {
			return // no entry carries it: Decode refuses invalid UTF-8
		}
		if kind == "" || int(k)%(len(kinds)+1) < len(kinds) {
			kind = kinds[int(k)%len(kinds)]
		}
		field := fields[int(fi)%len(fields)]
		p := map[string]string{"title": "T", "palette": "🍎", "player": "ann", "avatar": "🦊", "guess": "🍎",
			"code": "🍎", "text": "hi", "winner": "ann"}
		for _, name := range fields {
			if p[name] == "" {
				p[name] = "1"
			}
		}
		p[field] = value
		body, err := templates.RenderLine(kind, p, at)
		if err != nil {
			t.Fatal(err)
		}
		item := templates.LineItemHTML(1, "evt_X", kind, body)
		// The structure holds for any payload; the text is checked as
		// the pipeline renders it, after Validate (an emoji field of
		// ASCII, which Validate refuses, is split a character a span).
		shown := !event.Known(kind) || shownAs(kind, field) && event.Validate(kind, p) == nil
		if !event.Known(kind) {
			value, field = kind, "kind"
		}
		checkMarkup(t, kind+"/"+field, item, value, false)
		if text := readBack(textOf(t, item)); shown && !strings.Contains(text, readBack(value)) {
			t.Errorf("%s/%s: %+.60q not shown whole; text was %+.200q", kind, field, value, text)
		}
	})
}

// textOf is the text an HTML parser reads from item.
func textOf(t *testing.T, item string) string {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(item))
	var b strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			b.Write(z.Text())
		}
	}
}

// readBack is s as the checks compare it: line ends as an HTML parser
// reads them (CR LF and CR as LF), without the isolate controls that
// RenderLine puts around a value's own (isolated).
func readBack(s string) string {
	return strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u2068", "", "\u2069", "").Replace(s)
}

// FuzzSymbolsCounted: a line never shows an emoji field as more symbols
// than event.Symbols counted when the field was validated, so a field of
// at most N emoji shows at most 2N (docs/contracts.md, "Kinds"): the
// count may be loose, a flag counted twice, but never short.
func FuzzSymbolsCounted(f *testing.F) {
	for _, s := range []string{"🍎🍌", "\U0001F3FB🍎🍌", "\U000E0067🍎", "\ufe0f🍎", "\u200d🍎🍌", "🇫🇷1️⃣", "🏴\U000E0067\U000E0062\U000E007F"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if shown, counted := len(templates.Symbols(s)), event.Symbols(s); shown > counted {
			t.Fatalf("%+q is shown as %d symbols, counted as %d", s, shown, counted)
		}
	})
}
