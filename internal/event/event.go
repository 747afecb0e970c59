// Package event holds the codemojex domain contracts shared by the writer,
// the consumer, the store and the web: EVT ids, game names, Redis keys and
// the entry kinds with their fields (see docs/contracts.md).
package event

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Redis keys and channels that are not per game.
const (
	// RegistryKey is the sorted set of games: member GAME, score = unix ms
	// of its last event.
	RegistryKey = "codemojex:games"
	// PresenceReplicasKey is the sorted set of web replicas that count
	// viewers: member REPLICA, score = unix ms (Redis's clock) at which its
	// count expires. Each replica drops expired members on every beat, and
	// the key itself expires with its last live member (docs/live-page.md).
	PresenceReplicasKey = "codemojex:presence:replicas"
)

// PresenceKey returns the hash of one web replica's viewers: field GAME,
// value = websockets and event streams open on that game. It expires unless the replica
// refreshes it, so a crashed replica's viewers vanish on their own.
func PresenceKey(replica string) string { return "codemojex:presence:replica:" + replica }

// PresenceNameKey returns the string naming the replica that last counted
// viewers under name, a name one live process holds at a time (a consumer
// name, under its lease): a process that starts under the name removes the
// count of the one before (a crashed one's, still counted until it
// expired). It expires with that count.
func PresenceNameKey(name string) string { return "codemojex:presence:name:" + name }

// DoorbellChannel returns the sharded pub/sub channel (SPUBLISH) on which
// the renderers of group ring after each committed batch: a hint that the
// host's store moved, never the truth. One channel per group, because a
// group is a host and only the renderers sharing its store care; the hash
// tag puts it in one slot, so on a cluster it costs one shard, not every
// node as PUBLISH would.
func DoorbellChannel(group string) string { return "codemojex:feed:doorbell:{" + group + "}" }

// MaxEntryBytes is the largest entry (sum of field names and values) that is
// accepted; larger entries are malformed.
const MaxEntryBytes = 8 << 10

// Limits on untrusted text fields.
const (
	MaxPlayerRunes = 64
	MaxChatRunes   = 280
	MaxTitleRunes  = 120
)

// Entry field names every entry may carry.
const (
	FieldID   = "id"
	FieldKind = "kind"
	FieldAt   = "at"
)

// Kinds of events known to this version. An unknown kind is stored and
// rendered as a neutral line, never dead-lettered.
const (
	KindGameStarted  = "game_started"
	KindPlayerJoined = "player_joined"
	KindPlayerLeft   = "player_left"
	KindRoundStarted = "round_started"
	KindGuess        = "guess"
	KindRoundWon     = "round_won"
	KindChat         = "chat"
	KindGameOver     = "game_over"
)

// Errors of this package. Validation errors wrap ErrInvalid.
var (
	ErrInvalid = errors.New("invalid entry")
)

var gameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// ValidGame reports whether s is a valid game name.
func ValidGame(s string) bool { return gameRe.MatchString(s) }

// StreamKey returns the event stream key of game.
func StreamKey(game string) string { return "codemojex:{" + game + "}:events" }

// DeadKey returns the dead-letter stream key of game.
func DeadKey(game string) string { return "codemojex:{" + game + "}:dead" }

// GameOfKey returns the game of a per-game key (events or dead stream).
func GameOfKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "codemojex:{")
	if !ok {
		return "", false
	}
	game, _, ok := strings.Cut(rest, "}")
	if !ok || !ValidGame(game) {
		return "", false
	}
	return game, true
}

// DeadKeyOf returns the dead-letter key that goes with an events stream key.
func DeadKeyOf(streamKey string) string {
	if game, ok := GameOfKey(streamKey); ok {
		return DeadKey(game)
	}
	return streamKey + ":dead"
}

// Known reports whether kind is one this version renders specifically.
func Known(kind string) bool {
	_, ok := required[kind]
	return ok
}

type fieldRule func(string) error

var required = map[string]map[string]fieldRule{
	KindGameStarted:  {"title": text(MaxTitleRunes), "rounds": intRange(1, 100), "code_length": intRange(1, 12), "palette": emoji(64)},
	KindPlayerJoined: {"player": player, "avatar": emoji(1)},
	KindPlayerLeft:   {"player": player},
	KindRoundStarted: {"round": intRange(1, 1000)},
	KindGuess:        {"player": player, "round": intRange(1, 1000), "guess": emoji(12), "exact": intRange(0, 12), "near": intRange(0, 12)},
	KindRoundWon:     {"player": player, "round": intRange(1, 1000), "code": emoji(12), "guesses": intRange(1, 1_000_000), "points": intRange(0, 1_000_000)},
	KindChat:         {"player": player, "text": text(MaxChatRunes)},
	KindGameOver:     {"winner": optionalPlayer},
}

// Validate checks the fields of a known kind (fields excludes "id"). An
// unknown kind is valid here: it is rendered neutrally. The error wraps
// ErrInvalid and names every field at fault, in field order: the missing
// ones first (`guess: missing fields "exact", "near"`), then each invalid
// one with why (`; field "round": out of range 1..1000`). It named the
// first only, so an entry lacking two fields (gamesim's malformed guess)
// was refused by feedctl dead requeue again after -set fixed one of them.
func Validate(kind string, fields map[string]string) error {
	rules, ok := required[kind]
	if !ok {
		return nil
	}
	var missing, invalid []string
	// Deterministic order so the reason is stable.
	for _, name := range sortedKeys(rules) {
		v, ok := fields[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		if err := rules[name](v); err != nil {
			invalid = append(invalid, fmt.Sprintf("field %q: %v", name, err))
		}
	}
	if missing == nil && invalid == nil {
		return nil
	}
	return fmt.Errorf("%w: %s: %s", ErrInvalid, kind, Faults(missing, invalid...))
}

// Faults words what is wrong with an entry's fields as one reason, as
// Validate and feed.Decode give it: the missing fields first, quoted
// (`missing field "id"`, `missing fields "exact", "near"`), then each
// invalid one as given, all joined by "; ". One wording for both, so that
// a dead letter's reason reads alike whichever check refused it.
func Faults(missing []string, invalid ...string) string {
	faults := make([]string, 0, 1+len(invalid))
	switch len(missing) {
	case 0:
	case 1:
		faults = append(faults, "missing field "+strconv.Quote(missing[0]))
	default:
		q := make([]string, len(missing))
		for i, name := range missing {
			q[i] = strconv.Quote(name)
		}
		faults = append(faults, "missing fields "+strings.Join(q, ", "))
	}
	return strings.Join(append(faults, invalid...), "; ")
}

func sortedKeys(m map[string]fieldRule) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// insertion sort: maps here hold at most five keys
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// intRange accepts a decimal integer from lo to hi (lo >= 0) written as
// the lines show it: ASCII digits only, without a sign or a leading zero
// (docs/contracts.md, "Kinds"). strconv.Atoi alone also took "+5", "-0"
// and "0000000001", which the lines then showed as "?".
func intRange(lo, hi int) fieldRule {
	return func(s string) error {
		if !decimal(s) {
			return errors.New("not a decimal integer")
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return errors.New("not an integer")
		}
		if n < lo || n > hi {
			return fmt.Errorf("out of range %d..%d", lo, hi)
		}
		return nil
	}
}

func text(maxRunes int) fieldRule {
	return func(s string) error {
		if blank(s) {
			return errors.New("empty")
		}
		if utf8.RuneCountInString(s) > maxRunes {
			return fmt.Errorf("longer than %d characters", maxRunes)
		}
		return nil
	}
}

// blank reports whether s shows nothing: every rune is white space, a
// control character or one that Unicode says to draw as nothing (a
// default ignorable code point: zero width space and joiners, bidi
// controls, variation selectors, the Hangul fillers, tags). strings.TrimSpace
// alone took a name of one U+200B, or a chat of one U+202E, which the page
// showed as no name and no text ("guessed 🍎"), and a row without a name
// on the scoreboard (TestValidate).
func blank(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && !unicode.IsControl(r) && !ignorable(r) {
			return false
		}
	}
	return true
}

// ignorable reports whether r is a default ignorable code point, as
// Unicode derives the property (DerivedCoreProperties.txt): the other
// default ignorables, format characters and variation selectors, less
// white space, the interlinear annotation characters, the Egyptian format
// controls and the prepended concatenation marks (U+0600, which are drawn).
func ignorable(r rune) bool {
	switch {
	case r >= 0xFFF9 && r <= 0xFFFB, r >= 0x13430 && r <= 0x1343F,
		unicode.Is(unicode.Prepended_Concatenation_Mark, r):
		return false
	}
	return unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector)
}

// decimal reports whether s is a non-negative decimal integer in its
// shortest form: "0", or ASCII digits not starting with 0.
func decimal(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// player accepts a player name: text of at most MaxPlayerRunes characters
// without control characters (C0, DEL, C1). A name is a key (the store's
// players, the page's scoreboard rows, matched by their data-player), and
// an HTML parser rewrites control characters (CR LF and CR to LF, NUL to
// U+FFFD): "a\rb" and "a\nb" were two players to the server and one row
// to the page.
func player(s string) error {
	if err := text(MaxPlayerRunes)(s); err != nil {
		return err
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("control character %U", r)
		}
	}
	return nil
}

func optionalPlayer(s string) error {
	if s == "" {
		return nil
	}
	return player(s)
}

// emoji accepts a non-empty string of at most max symbols, where a symbol is
// counted loosely (runes that are not joiners or variation selectors), so
// that composed emoji such as flags and skin tones count as one or two.
func emoji(max int) fieldRule {
	return func(s string) error {
		n := Symbols(s)
		if n == 0 {
			return errors.New("empty")
		}
		if n > max*2 || len(s) > max*32 {
			return fmt.Errorf("more than %d symbols", max)
		}
		for _, r := range s {
			if r < 0x80 {
				return errors.New("not emoji")
			}
		}
		return nil
	}
}

// Symbols counts the visible symbols of an emoji string as the lines split
// it (SplitEmoji, then the templates' folding of tags): zero width
// joiners, variation selectors, skin tone modifiers and tags (of a
// subdivision flag) are folded into the symbol before them, and a rune
// after a joiner joins that symbol. It once counted each joined rune and
// each tag as a symbol of its own, so a family (man, woman and girl joined
// by ZWJs), two people holding hands or Scotland's flag was "more than 1
// symbols" as an avatar and its player_joined was poison (TestValidate).
// A selector, a modifier or a tag with no symbol before it is a symbol of
// its own, as the lines show it; until 6 Dec 2026 Symbols left it out, so
// an avatar of a skin tone, an apple and a banana passed as one emoji and
// its line showed three (FuzzSymbolsCounted in templates).
func Symbols(s string) int {
	n := 0
	join := false
	for _, r := range s {
		switch {
		case r == 0x200D:
			join = true
			continue
		case modifier(r) && n > 0:
			continue
		case join && n > 0:
			// Whatever follows a joiner, a tag too, is part of the
			// symbol before it, and takes the joiner up (SplitEmoji).
			join = false
			continue
		case tag(r) && n > 0:
			continue
		}
		n++
	}
	return n
}

// tag reports whether r is a tag character (U+E0020–U+E007F): the tail
// of a subdivision flag, which the lines keep with the symbol before it.
func tag(r rune) bool { return r >= 0xE0020 && r <= 0xE007F }

// modifier reports whether r is a variation selector or a skin tone
// modifier: part of the symbol before it, for Symbols and SplitEmoji alike.
func modifier(r rune) bool {
	return r >= 0xFE00 && r <= 0xFE0F || r >= 0x1F3FB && r <= 0x1F3FF
}

// SplitEmoji splits an emoji string into its symbols, keeping joiners,
// variation selectors and modifiers with the symbol they follow. The
// symbols are substrings of s (a line renders them once per event, on the
// hot path), except when s is not valid UTF-8: each bad byte then reads as
// U+FFFD, as ranging over s does.
func SplitEmoji(s string) []string {
	if !utf8.ValidString(s) {
		var b strings.Builder
		for _, r := range s {
			b.WriteRune(r)
		}
		s = b.String()
	}
	// At most one symbol a rune: sized once rather than grown.
	out := make([]string, 0, utf8.RuneCountInString(s))
	start := 0 // of out's last symbol, when there is one
	join := false
	for i, r := range s {
		end := i + utf8.RuneLen(r)
		switch {
		case r == 0x200D:
			if len(out) > 0 {
				out[len(out)-1] = s[start:end]
			}
			join = true
			continue
		case modifier(r):
			if len(out) > 0 {
				out[len(out)-1] = s[start:end]
				continue
			}
		}
		if join && len(out) > 0 {
			// What follows a joiner extends the symbol before it. Runes
			// only ever extend the symbol that ends right where they
			// start, so the symbol stays one substring.
			out[len(out)-1] = s[start:end]
			join = false
			continue
		}
		start = i
		out = append(out, s[i:end])
	}
	return out
}
