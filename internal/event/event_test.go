package event_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/codemojex/feed/internal/event"
)

func TestValidID(t *testing.T) {
	m := event.NewMinter(1)
	good := m.Next(time.Now())
	tests := []struct {
		id   string
		want bool
	}{
		{good, true},
		{"evt_01HZX3K4M5N6P7Q8R9S0T1V2W3", true},
		{"evt_01hzx3k4m5n6p7q8r9s0t1v2w3", false}, // lower case
		{"evt_01HZX3K4M5N6P7Q8R9S0T1V2W", false},  // short
		{"evt_01HZX3K4M5N6P7Q8R9S0T1V2WI", false}, // I is not Crockford
		{"evt_81HZX3K4M5N6P7Q8R9S0T1V2W3", false}, // overflows 128 bits
		{"EVT_01HZX3K4M5N6P7Q8R9S0T1V2W3", false},
		{"01HZX3K4M5N6P7Q8R9S0T1V2W3", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := event.ValidID(tt.id); got != tt.want {
			t.Errorf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

func TestMinterStrictlyIncreasing(t *testing.T) {
	m := event.NewMinter(7)
	now := time.Now()
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				// The clock steps back now and then: ids must still grow.
				id := m.Next(now.Add(time.Duration(i%3-1) * time.Millisecond))
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Ids appended under the lock after Next: a later append may hold an
	// earlier id only by a race of goroutines, so check set order instead.
	seen := map[string]bool{}
	for _, id := range ids {
		if !event.ValidID(id) {
			t.Fatalf("minted invalid id %q", id)
		}
		if seen[id] {
			t.Fatalf("minted %q twice", id)
		}
		seen[id] = true
	}
	var prev string
	for i := 0; i < 1000; i++ {
		id := m.Next(now)
		if id <= prev {
			t.Fatalf("id %d %q not greater than %q", i, id, prev)
		}
		prev = id
	}
}

// TestMinterAfter: a writer restarted within the millisecond of its last
// id, with the same seed, minted that millisecond's first id again (a
// duplicate EVT id: a conflict or a line silently lost); resumed After its
// last id it goes on above it, also past an id whose random part is full.
func TestMinterAfter(t *testing.T) {
	now := time.Now()
	old := event.NewMinter(3)
	first := old.Next(now)
	last := first
	for range 5 {
		last = old.Next(now)
	}
	if again := event.NewMinter(3).Next(now); again != first {
		t.Fatalf("a new Minter of the same seed minted %s, then %s: the premise changed", first, again)
	}
	m := event.NewMinter(3)
	m.After(last)
	m.After("evt_not-an-id")
	m.After(first) // lower: no effect
	if id := m.Next(now); id <= last {
		t.Fatalf("resumed after %s, minted %s", last, id)
	}
	full := event.IDPrefix + ulid.MustNew(ulid.Timestamp(now), bytes.NewReader(bytes.Repeat([]byte{0xff}, 10))).String()
	m.After(full)
	id := m.Next(now.Add(-time.Second))
	if id <= full || !event.ValidID(id) {
		t.Fatalf("resumed after %s, minted %s", full, id)
	}
	if next := m.Next(now); next <= id {
		t.Fatalf("minted %s after %s", next, id)
	}
}

// TestMinterClockOutOfRange: a clock outside what a ULID holds (before
// 1970: a zero time.Time, a dead RTC; after the year 10889) panicked with
// "ulid: time too big". The Minter mints at the nearest time it can hold,
// and its ids still grow.
func TestMinterClockOutOfRange(t *testing.T) {
	m := event.NewMinter(1)
	var prev string
	for _, at := range []time.Time{{}, time.Unix(-1, 0), time.Unix(0, 0), time.Now(), time.UnixMilli(int64(ulid.MaxTime())).Add(time.Hour), time.Unix(0, 0)} {
		id := m.Next(at)
		if !event.ValidID(id) || id <= prev {
			t.Fatalf("Next(%v) = %q after %q", at, id, prev)
		}
		prev = id
	}
	if at, _ := event.IDTime(prev); at.UnixMilli() != int64(ulid.MaxTime()) {
		t.Fatalf("last id at %v, want ULID's last millisecond", at)
	}
	if id := event.NewMinter(1).Next(time.Time{}); !strings.HasPrefix(id, event.IDPrefix+"0000000000") {
		t.Fatalf("Next(zero time) = %q, want the epoch's millisecond", id)
	}
}

// mintNoPanic calls m.Next(at) n times and returns the ids, failing t
// (not crashing the test binary) if Next panics.
func mintNoPanic(t *testing.T, m *event.Minter, at time.Time, n int) (ids []string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Next(%v) panicked after %d ids: %v", at, len(ids), r)
		}
	}()
	for range n {
		ids = append(ids, m.Next(at))
	}
	return ids
}

// TestMinterLastMillisecond: resumed After an id in ULID's last
// millisecond (the year 10889), Next panicked: no id sorts after
// evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ, and moving on to the next millisecond
// is "ulid: time too big". A Minter never panics: After ignores an id in
// that millisecond, and ids minted there from a clock past it go on
// increasing, many of them, as after an id of the millisecond before.
func TestMinterLastMillisecond(t *testing.T) {
	last := ulid.MaxTime()
	idAt := func(ms uint64, random byte) string {
		return event.IDPrefix + ulid.MustNew(ms, bytes.NewReader(bytes.Repeat([]byte{random}, 10))).String()
	}
	beyond := time.UnixMilli(int64(last)).Add(time.Hour)
	tests := []struct {
		name  string
		after string
		at    time.Time
		// above: the ids minted sort after the id given to After, which
		// was honoured.
		above bool
	}{
		{"ULID's last id", "evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ", beyond, false},
		{"last millisecond, 3 ids below the last", "evt_7ZZZZZZZZZZZZZZZZZZZZZZZZW", beyond, false},
		{"last millisecond, empty random part", idAt(last, 0), beyond, false},
		{"millisecond before, full random part", idAt(last-1, 0xff), beyond, true},
		{"millisecond before, full, clock there", idAt(last-1, 0xff), time.UnixMilli(int64(last - 1)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !event.ValidID(tt.after) {
				t.Fatalf("premise: %s is no EVT id", tt.after)
			}
			m := event.NewMinter(1)
			m.After(tt.after)
			ids := mintNoPanic(t, m, tt.at, 10000)
			prev := ""
			for i, id := range ids {
				if !event.ValidID(id) || id <= prev {
					t.Fatalf("id %d: %q after %q", i, id, prev)
				}
				prev = id
			}
			if tt.above && ids[0] <= tt.after {
				t.Fatalf("resumed after %s, minted %s", tt.after, ids[0])
			}
			if at, _ := event.IDTime(prev); at.UnixMilli() != int64(last) {
				t.Fatalf("last id %s at %v, want ULID's last millisecond", prev, at)
			}
		})
	}
}

// overflowing is a monotonic entropy whose every read within a
// millisecond after the first overflows, as ulid.Monotonic's does after
// some 2^48 reads.
type overflowing struct {
	fill byte
	ms   uint64
	read bool
}

func (e *overflowing) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.fill
	}
	return len(p), nil
}

func (e *overflowing) MonotonicRead(ms uint64, p []byte) error {
	if e.read && ms == e.ms {
		return ulid.ErrMonotonicOverflow
	}
	e.ms, e.read = ms, true
	_, err := e.Read(p)
	return err
}

// TestMinterEntropyOverflowLastMillisecond: the entropy overflowing in
// ULID's last millisecond made Next move on to the next one, and panic
// ("ulid: time too big"). It goes on from the last id instead; past
// ULID's very last id, which nothing sorts after, Next returns that id
// again rather than panic.
func TestMinterEntropyOverflowLastMillisecond(t *testing.T) {
	beyond := time.UnixMilli(int64(ulid.MaxTime())).Add(time.Hour)
	t.Run("room left", func(t *testing.T) {
		ids := mintNoPanic(t, event.NewMinterFrom(&overflowing{fill: 0}), beyond, 1000)
		for i := 1; i < len(ids); i++ {
			if !event.ValidID(ids[i]) || ids[i] <= ids[i-1] {
				t.Fatalf("id %d: %q after %q", i, ids[i], ids[i-1])
			}
		}
	})
	t.Run("none left", func(t *testing.T) {
		const top = "evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
		ids := mintNoPanic(t, event.NewMinterFrom(&overflowing{fill: 0xff}), beyond, 3)
		for i, id := range ids {
			if id != top {
				t.Fatalf("id %d: %q, want ULID's last id %s", i, id, top)
			}
		}
	})
	t.Run("millisecond before", func(t *testing.T) {
		// The overflow moves on to the next millisecond, as before: to
		// ULID's last id, here.
		at := time.UnixMilli(int64(ulid.MaxTime() - 1))
		ids := mintNoPanic(t, event.NewMinterFrom(&overflowing{fill: 0xff}), at, 2)
		for i := 1; i < len(ids); i++ {
			if !event.ValidID(ids[i]) || ids[i] <= ids[i-1] {
				t.Fatalf("id %d: %q after %q", i, ids[i], ids[i-1])
			}
		}
	})
}

// FuzzValidID holds ValidID to the spec (docs/contracts.md, "EVT ids"):
// "evt_" and a ULID in Crockford base32, upper case, whose first character
// is at most 7. An accepted id is the one spelling of its 128-bit value,
// so two spellings of one id never become two lines.
func FuzzValidID(f *testing.F) {
	good := event.NewMinter(1).Next(time.Now())
	for _, s := range []string{
		good, "evt_01HZX3K4M5N6P7Q8R9S0T1V2W3", "evt_01hzx3k4m5n6p7q8r9s0t1v2w3",
		"evt_01HZX3K4M5N6P7Q8R9S0T1V2WI", "evt_01HZX3K4M5N6P7Q8R9S0T1V2WL", "evt_01HZX3K4M5N6P7Q8R9S0T1V2WO",
		"evt_01HZX3K4M5N6P7Q8R9S0T1V2WU", "evt_81HZX3K4M5N6P7Q8R9S0T1V2W3", "evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
		"evt_00000000000000000000000000", " evt_01HZX3K4M5N6P7Q8R9S0T1V2W3", "evt_01HZX3K4M5N6P7Q8R9S0T1V2W3 ",
		"evt_01HZX3K4M5N6P7Q8R9S0T1V2W\uff13", "evt_01HZX3K4M5N6P7Q8R9S0T1V2\u0417", "EVT_01HZX3K4M5N6P7Q8R9S0T1V2W3",
		"evt_01HZX3K4M5N6P7Q8R9S0T1V2W3\x00", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := false
		if u, ok := strings.CutPrefix(s, event.IDPrefix); ok && len(u) == 26 {
			if v, err := ulid.ParseStrict(u); err == nil && v.String() == u {
				want = true
			}
		}
		if got := event.ValidID(s); got != want {
			t.Fatalf("ValidID(%q) = %v, want %v", s, got, want)
		}
		at, ok := event.IDTime(s)
		if ok != want {
			t.Fatalf("IDTime(%q) ok = %v, want %v", s, ok, want)
		}
		if ok && event.IDPrefix+ulid.MustParse(s[len(event.IDPrefix):]).String() != s || ok && at.UnixMilli() < 0 {
			t.Fatalf("IDTime(%q) = %v", s, at)
		}
	})
}

func TestKeys(t *testing.T) {
	if got := event.StreamKey("g-1"); got != "codemojex:{g-1}:events" {
		t.Errorf("StreamKey = %q", got)
	}
	if got := event.DeadKeyOf("codemojex:{g-1}:events"); got != "codemojex:{g-1}:dead" {
		t.Errorf("DeadKeyOf = %q", got)
	}
	for _, tt := range []struct {
		key  string
		game string
		ok   bool
	}{
		{"codemojex:{abc}:events", "abc", true},
		{"codemojex:{ABC}:events", "", false},
		{"codemojex:abc:events", "", false},
		{"other:{abc}:events", "", false},
	} {
		game, ok := event.GameOfKey(tt.key)
		if game != tt.game || ok != tt.ok {
			t.Errorf("GameOfKey(%q) = %q, %v; want %q, %v", tt.key, game, ok, tt.game, tt.ok)
		}
	}
	for _, tt := range []struct {
		name string
		ok   bool
	}{{"a", true}, {"game-01", true}, {"-a", false}, {"A", false}, {"a_b", false}, {strings.Repeat("a", 64), true}, {strings.Repeat("a", 65), false}} {
		if event.ValidGame(tt.name) != tt.ok {
			t.Errorf("ValidGame(%q) != %v", tt.name, tt.ok)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		kind   string
		fields map[string]string
		bad    string // substring of the reason; "" = valid
	}{
		{"game started", "game_started", map[string]string{"title": "Friday", "rounds": "3", "code_length": "4", "palette": "🍎🍌🍇🍒🥝🍑🍍🥥"}, ""},
		{"joined", "player_joined", map[string]string{"player": "ada", "avatar": "🦊"}, ""},
		{"joined two avatars", "player_joined", map[string]string{"player": "ada", "avatar": "🦊🦊🦊"}, "avatar"},
		{"joined ascii avatar", "player_joined", map[string]string{"player": "ada", "avatar": "x"}, "avatar"},
		{"hostile name is valid", "player_joined", map[string]string{"player": "<script>alert(1)</script>", "avatar": "👩🏽‍🚀"}, ""},
		{"left", "player_left", map[string]string{"player": "ada"}, ""},
		{"left empty", "player_left", map[string]string{"player": " "}, "player"},
		{"round", "round_started", map[string]string{"round": "2"}, ""},
		{"round zero", "round_started", map[string]string{"round": "0"}, "round"},
		{"guess", "guess", map[string]string{"player": "ada", "round": "1", "guess": "🍎🍌🍇🍒", "exact": "1", "near": "2"}, ""},
		{"guess exact abc", "guess", map[string]string{"player": "ada", "round": "1", "guess": "🍎🍌🍇🍒", "exact": "abc", "near": "2"}, "exact"},
		{"guess missing near", "guess", map[string]string{"player": "ada", "round": "1", "guess": "🍎", "exact": "1"}, `guess: missing field "near"`},
		// Every field at fault is named, the missing ones first: the
		// first alone was named, and a requeue fixing it was refused
		// again for the next.
		{"guess missing exact and near", "guess", map[string]string{"player": "ada", "round": "1", "guess": "🍎"}, `guess: missing fields "exact", "near"`},
		{"guess missing near, round and exact bad", "guess", map[string]string{"player": "ada", "round": "0", "guess": "🍎", "exact": "x"},
			`guess: missing field "near"; field "exact": not a decimal integer; field "round": out of range 1..1000`},
		{"won", "round_won", map[string]string{"player": "ada", "round": "1", "code": "🍎🍌🍇🍒", "guesses": "5", "points": "100"}, ""},
		{"won negative points", "round_won", map[string]string{"player": "ada", "round": "1", "code": "🍎", "guesses": "5", "points": "-1"}, "points"},
		{"chat", "chat", map[string]string{"player": "ada", "text": "gg ‮ wp"}, ""},
		{"chat too long", "chat", map[string]string{"player": "ada", "text": strings.Repeat("é", 281)}, "text"},
		{"chat 280", "chat", map[string]string{"player": "ada", "text": strings.Repeat("é", 280)}, ""},
		{"over", "game_over", map[string]string{"winner": "ada"}, ""},
		{"over no winner", "game_over", map[string]string{"winner": ""}, ""},
		{"over missing", "game_over", map[string]string{}, "winner"},
		{"unknown kind", "emote", map[string]string{}, ""},
		// A player name is a key (the store's players, the page's
		// scoreboard rows): control characters, which an HTML parser
		// rewrites (CR LF and CR to LF, NUL to U+FFFD), are refused.
		{"name with CR", "player_joined", map[string]string{"player": "a\rb", "avatar": "🦊"}, "player"},
		{"name with LF", "player_left", map[string]string{"player": "a\nb"}, "player"},
		{"name with CR LF", "chat", map[string]string{"player": "a\r\nb", "text": "hi"}, "player"},
		{"name with NUL", "guess", map[string]string{"player": "a\x00b", "round": "1", "guess": "🍎", "exact": "1", "near": "2"}, "player"},
		{"name with tab", "player_left", map[string]string{"player": "a\tb"}, "player"},
		{"name with DEL", "player_left", map[string]string{"player": "a\x7fb"}, "player"},
		{"name with C1", "player_left", map[string]string{"player": "a\u0085b"}, "player"},
		{"winner with CR", "game_over", map[string]string{"winner": "a\rb"}, "winner"},
		{"name with U+FFFD is valid", "player_left", map[string]string{"player": "a\uFFFDb"}, ""},
		{"chat text keeps its newlines", "chat", map[string]string{"player": "ada", "text": "line one\r\nline two"}, ""},
		// Not blank means something shows: a name, a chat or a title
		// of characters drawn as nothing (zero width, bidi controls,
		// fillers, tags, controls) is empty, and one with a letter or an
		// emoji among them is not.
		{"name of a zero width space", "player_joined", map[string]string{"player": "\u200b", "avatar": "🦊"}, `field "player": empty`},
		{"name of joiners and a BOM", "player_left", map[string]string{"player": "\u200d\u200c\ufeff\u2060"}, "player"},
		{"name of a bidi override", "guess", map[string]string{"player": "\u202e\u2066", "round": "1", "guess": "🍎", "exact": "1", "near": "2"}, "player"},
		{"name of a Hangul filler", "player_left", map[string]string{"player": "\u3164\u115f"}, "player"},
		{"name of a soft hyphen and a selector", "player_left", map[string]string{"player": "\u00ad\ufe0f"}, "player"},
		{"winner of a tag", "game_over", map[string]string{"winner": "\U000E0041"}, "winner"},
		{"chat of NUL", "chat", map[string]string{"player": "ada", "text": "\x00"}, `field "text": empty`},
		{"chat of a zero width space and newlines", "chat", map[string]string{"player": "ada", "text": "\u200b\r\n\u200b"}, "text"},
		{"title of a word joiner", "game_started", map[string]string{"title": "\u2060", "rounds": "3", "code_length": "4", "palette": "🍎"}, "title"},
		{"name with a joiner in it", "player_left", map[string]string{"player": "a\u200db"}, ""},
		{"name of an emoji", "player_left", map[string]string{"player": "🦊"}, ""},
		{"name of a combining mark", "player_left", map[string]string{"player": "\u0301"}, ""},
		{"name of an Arabic number sign", "player_left", map[string]string{"player": "\u0600"}, ""},
		{"chat of a selector after a heart", "chat", map[string]string{"player": "ada", "text": "\u2764\ufe0f"}, ""},
		// Numbers are decimal integers as the lines show them: digits only.
		{"rounds +5", "game_started", map[string]string{"title": "F", "rounds": "+5", "code_length": "4", "palette": "🍎"}, "rounds"},
		{"exact -0", "guess", map[string]string{"player": "ada", "round": "1", "guess": "🍎", "exact": "-0", "near": "2"}, "exact"},
		{"round 07", "round_started", map[string]string{"round": "07"}, "round"},
		{"points 0000000001", "round_won", map[string]string{"player": "ada", "round": "1", "code": "🍎", "guesses": "5", "points": "0000000001"}, "points"},
		{"points 0", "round_won", map[string]string{"player": "ada", "round": "1", "code": "🍎", "guesses": "5", "points": "0"}, ""},
		{"round with space", "round_started", map[string]string{"round": " 7"}, "round"},
		// A range's bounds are in it.
		{"rounds and code length at most", "game_started", map[string]string{"title": "F", "rounds": "100", "code_length": "12", "palette": "🍎"}, ""},
		{"rounds 101", "game_started", map[string]string{"title": "F", "rounds": "101", "code_length": "4", "palette": "🍎"}, "rounds"},
		{"exact and near 12", "guess", map[string]string{"player": "ada", "round": "1000", "guess": "🍎", "exact": "12", "near": "12"}, ""},
		{"near 13", "guess", map[string]string{"player": "ada", "round": "1", "guess": "🍎", "exact": "0", "near": "13"}, "near"},
		{"round fullwidth digit", "round_started", map[string]string{"round": "\uff17"}, "round"},
		// Emoji are counted as players see them (docs/contracts.md,
		// "Kinds"): a ZWJ sequence or a subdivision flag is one symbol,
		// whatever its runes.
		{"avatar family", "player_joined", map[string]string{"player": "ada", "avatar": "👨\u200d👩\u200d👧\u200d👦"}, ""},
		{"avatar holding hands", "player_joined", map[string]string{"player": "ada", "avatar": "🧑🏿\u200d🤝\u200d🧑🏻"}, ""},
		{"avatar subdivision flag", "player_joined", map[string]string{"player": "ada", "avatar": "🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F"}, ""},
		{"guess of twelve families", "guess", map[string]string{"player": "ada", "round": "1", "guess": strings.Repeat("👨\u200d👩\u200d👧", 12), "exact": "0", "near": "0"}, ""},
		{"guess of 25 emoji", "guess", map[string]string{"player": "ada", "round": "1", "guess": strings.Repeat("🍎", 25), "exact": "0", "near": "0"}, "guess"},
		{"avatar of three joined by nothing", "player_joined", map[string]string{"player": "ada", "avatar": "🍎🍌🍇"}, "avatar"},
		// A skin tone, a selector or a tag with nothing before it is a
		// symbol of its own, as a line shows it.
		{"avatar of a lone skin tone and two fruit", "player_joined", map[string]string{"player": "ada", "avatar": "\U0001F3FB🍎🍌"}, "avatar"},
		{"avatar of a lone tag and two fruit", "player_joined", map[string]string{"player": "ada", "avatar": "\U000E0067🍎🍌"}, "avatar"},
		{"avatar of a fruit with a skin tone", "player_joined", map[string]string{"player": "ada", "avatar": "\U0001F3FB🍎"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := event.Validate(tt.kind, tt.fields)
			if tt.bad == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, event.ErrInvalid) || !strings.Contains(err.Error(), tt.bad) {
				t.Fatalf("Validate = %v; want ErrInvalid naming %q", err, tt.bad)
			}
		})
	}
}

func TestSplitEmoji(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"🍎👩🏽‍🚀❤️🍌", []string{"🍎", "👩🏽‍🚀", "❤️", "🍌"}},
		{"", nil},
		{"a", []string{"a"}},
		{"\u200d🍎🍌", []string{"🍎🍌"}},         // a leading joiner is dropped, and still joins
		{"\ufe0f🍎", []string{"\ufe0f", "🍎"}}, // a leading selector is a symbol of its own
		{"🍎\u200d", []string{"🍎\u200d"}},
		{"👋🏿👋", []string{"👋🏿", "👋"}},
		{"🍎\xff🍌", []string{"🍎", "\ufffd", "🍌"}}, // a bad byte reads as U+FFFD
		{"\xff\xfe", []string{"\ufffd", "\ufffd"}},
	}
	for _, tt := range tests {
		if got := event.SplitEmoji(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("SplitEmoji(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzSplitEmoji holds SplitEmoji, which slices its input, to the
// rune-by-rune reference below, which builds each symbol anew.
func FuzzSplitEmoji(f *testing.F) {
	for _, s := range []string{"🍎👩🏽‍🚀❤️🍌", "\u200d\u200d🍎", "🇫🇷🇩🇪", "1️⃣#️⃣", "\xff\u200d\xfe", "🏴\U000E0067\U000E0062\U000E007F"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := event.SplitEmoji(s), splitEmojiReference(s)
		if !slices.Equal(got, want) {
			t.Fatalf("SplitEmoji(%q) = %q, want %q", s, got, want)
		}
	})
}

func splitEmojiReference(s string) []string {
	var out []string
	join := false
	for _, r := range s {
		switch {
		case r == 0x200D:
			if len(out) > 0 {
				out[len(out)-1] += string(r)
			}
			join = true
			continue
		case r >= 0xFE00 && r <= 0xFE0F, r >= 0x1F3FB && r <= 0x1F3FF:
			if len(out) > 0 {
				out[len(out)-1] += string(r)
				continue
			}
		}
		if join && len(out) > 0 {
			out[len(out)-1] += string(r)
			join = false
			continue
		}
		out = append(out, string(r))
	}
	return out
}

func TestAt(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 512_345_678, time.FixedZone("x", 3600))
	if got, want := event.FormatAt(at), "2026-11-29T09:00:00.512Z"; got != want {
		t.Errorf("FormatAt = %q, want %q", got, want)
	}
	tests := []struct {
		in   string
		want time.Time
	}{
		{"2026-11-29T10:00:00.5Z", time.Date(2026, 11, 29, 10, 0, 0, 5e8, time.UTC)},
		{"2026-11-29T10:00:00Z", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)},
		{"2026-11-29T11:00:00+01:00", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)},
		{event.FormatAt(at), at.Truncate(time.Millisecond).UTC()},
		{"", time.Time{}},
		{"yesterday", time.Time{}},
		{"2026-13-01T00:00:00Z", time.Time{}},
	}
	for _, tt := range tests {
		if got := event.ParseAt(tt.in); !got.Equal(tt.want) || got.Location() != time.UTC && !got.IsZero() {
			t.Errorf("ParseAt(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
