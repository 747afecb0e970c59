package gamesim

import (
	"math/rand"
	"strings"
	"time"

	"github.com/codemojex/feed/internal/event"
)

// Reasons a malformed entry is malformed; each must be dead-lettered at
// once by a renderer (docs/contracts.md, "Bad entries").
const (
	BadMissingID    = "missing_id"
	BadInvalidID    = "invalid_id"
	BadMissingKind  = "missing_kind"
	BadMissingField = "missing_field"
	BadInvalidField = "invalid_field"
	BadOversize     = "oversize"
	BadInvalidUTF8  = "invalid_utf8"
)

// BadReasons lists every reason, in the order the simulator cycles them.
var BadReasons = []string{
	BadMissingID, BadInvalidID, BadMissingKind, BadMissingField,
	BadInvalidField, BadOversize, BadInvalidUTF8,
}

// UnknownKind is the kind of the well-formed entries of an unknown kind the
// simulator writes with Config.Unknown: a newer writer's event that an
// older renderer must store and show neutrally.
const UnknownKind = "emote"

// malformed returns a malformed entry's fields and reason. id is a freshly
// minted valid id that the entry may carry (so that monotone ids still hold
// among the entries that have a valid one).
func malformed(r *rand.Rand, id string, at time.Time) (values []string, reason string) {
	reason = BadReasons[r.Intn(len(BadReasons))]
	ts := event.FormatAt(at)
	guess := func(exact string) []string {
		return []string{"player", "ada", "round", "1", "guess", "🍎🍌🍇🍉", "exact", exact, "near", "0"}
	}
	head := func(id, kind string) []string {
		return []string{event.FieldID, id, event.FieldKind, kind, event.FieldAt, ts}
	}
	switch reason {
	case BadMissingID:
		values = append([]string{event.FieldKind, event.KindChat, event.FieldAt, ts}, "player", "ada", "text", "who am I?")
	case BadInvalidID:
		bad := []string{
			"", "12345", "evt_" + strings.ToLower(id[len(event.IDPrefix):]), id[:len(id)-1],
			"EVT_" + id[len(event.IDPrefix):], "evt_8" + id[len(event.IDPrefix)+1:], id + "0",
			id[:len(id)-1] + "U",
		}
		values = append(head(bad[r.Intn(len(bad))], event.KindChat), "player", "ada", "text", "my id is wrong")
	case BadMissingKind:
		values = append([]string{event.FieldID, id, event.FieldAt, ts}, "player", "ada", "text", "what am I?")
	case BadMissingField:
		g := guess("1")
		values = append(head(id, event.KindGuess), g[:len(g)-4]...) // no exact, no near
	case BadInvalidField:
		variants := [][]string{
			append(head(id, event.KindGuess), guess("abc")...),
			append(head(id, event.KindGuess), guess("-1")...),
			append(head(id, event.KindRoundStarted), "round", "0"),
			append(head(id, event.KindPlayerJoined), "player", "ada", "avatar", "A"),
			append(head(id, event.KindChat), "player", "ada", "text", "   "),
			append(head(id, event.KindChat), "player", "ada", "text", strings.Repeat("x", event.MaxChatRunes+1)),
			append(head(id, event.KindGameStarted), "title", "t", "rounds", "3", "code_length", "4", "palette", "abc"),
		}
		values = variants[r.Intn(len(variants))]
	case BadOversize:
		// Valid fields plus padding: only the size rule can catch it.
		values = append(head(id, event.KindChat), "player", "ada", "text", "too big",
			"padding", strings.Repeat("#", event.MaxEntryBytes+1))
	case BadInvalidUTF8:
		values = append(head(id, event.KindChat), "player", "ada", "text", "broken \xff\xfe bytes")
	}
	return values, reason
}

// unknown returns a well-formed entry of an unknown kind.
func unknown(r *rand.Rand, id string, at time.Time) []string {
	emotes := []string{"👏", "😂", "<b>wave</b>", "🙃"}
	return []string{event.FieldID, id, event.FieldKind, UnknownKind, event.FieldAt, event.FormatAt(at),
		"player", "ada", "emote", emotes[r.Intn(len(emotes))]}
}
