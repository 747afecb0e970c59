package feed

import (
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
)

// Decode turns a stream entry into a Message, applying the generic checks of
// docs/contracts.md "Bad entries": the entry fits in event.MaxEntryBytes, every field name
// and value is valid UTF-8, id is an EVT id and kind is present (every
// missing one named: missing fields "id", "kind"). Group and
// Attempts are left for the consumer to fill. A known kind's own fields are
// not checked here: that is event.Validate, called by the handler. Errors
// wrap ErrMalformed and say why in words fit for the dead_reason field.
func Decode(stream string, x redis.XMessage) (Message, error) {
	m := Message{Stream: stream, Position: x.ID}
	if len(x.Values) == 0 {
		return m, fmt.Errorf("%w: entry has no fields", ErrMalformed)
	}
	size, valid := 0, true
	for k, v := range x.Values {
		s, ok := v.(string)
		if !ok {
			return m, fmt.Errorf("%w: field %s: value of type %T", ErrMalformed, quote(k), v)
		}
		size += len(k) + len(s)
		valid = valid && utf8.ValidString(k) && utf8.ValidString(s)
	}
	if size > event.MaxEntryBytes {
		return m, fmt.Errorf("%w: entry of %d bytes is over the %d byte limit", ErrMalformed, size, event.MaxEntryBytes)
	}
	if !valid {
		// Sorted, so that the first bad field named is the same on every
		// try; only a bad entry pays for the sort.
		for _, k := range sortedFields(x.Values) {
			if !utf8.ValidString(k) {
				return m, fmt.Errorf("%w: field name %s is not valid UTF-8", ErrMalformed, quote(k))
			}
			if !utf8.ValidString(x.Values[k].(string)) {
				return m, fmt.Errorf("%w: field %s is not valid UTF-8", ErrMalformed, quote(k))
			}
		}
	}
	// Every required field at fault is named, the missing ones first, in
	// event.Validate's words (event.Faults): the reason is what feedctl
	// dead requeue shows, and an entry lacking both id and kind was
	// refused for its id only until 6 Dec 2026, then again for its kind
	// once -set gave it one.
	id, hasID := x.Values[event.FieldID].(string)
	kind, _ := x.Values[event.FieldKind].(string)
	var missing, invalid []string
	if !hasID {
		missing = append(missing, event.FieldID)
	}
	if kind == "" {
		missing = append(missing, event.FieldKind)
	}
	if hasID && !event.ValidID(id) {
		invalid = append(invalid, "invalid id "+quote(id))
	}
	if missing != nil || invalid != nil {
		return m, fmt.Errorf("%w: %s", ErrMalformed, event.Faults(missing, invalid...))
	}
	m.ID, m.Kind = id, kind
	m.Payload = make(map[string]string, len(x.Values)-1)
	for k, v := range x.Values {
		if k != event.FieldID {
			m.Payload[k] = v.(string)
		}
	}
	return m, nil
}

// quote quotes untrusted text for a reason, cut short so that a hostile
// entry cannot make its dead letter's reason as large as itself.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

// sortedFields returns the field names of values with id, kind and at
// first, the others in byte order: the order dead letters keep them in
// (go-redis hands fields over as a map, losing the writer's order).
func sortedFields(values map[string]any) []string {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		switch k {
		case event.FieldID:
			return 0
		case event.FieldKind:
			return 1
		case event.FieldAt:
			return 2
		}
		return 3
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := rank(keys[i]), rank(keys[j])
		if ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	return keys
}
