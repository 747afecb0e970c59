package feed_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

const goodID = "evt_01JD5ZQ4W8X9Y0Z1A2B3C4D5E6"

func TestDecode(t *testing.T) {
	key := event.StreamKey("g1")
	tests := []struct {
		name   string
		values map[string]any
		reason string // "" means valid
	}{
		{"valid", map[string]any{"id": goodID, "kind": "chat", "player": "ana", "text": "hi"}, ""},
		{"unknown kind is valid", map[string]any{"id": goodID, "kind": "teleport", "x": "1"}, ""},
		{"no fields", map[string]any{}, "no fields"},
		// A reason that starts "feed: " is the whole error: the missing
		// fields are all named, in Validate's words, the missing ones
		// first. Until 6 Dec 2026 an entry lacking both id and kind was
		// refused for its id only ("missing id"), and feedctl dead
		// requeue -set id=… was refused again, for its kind.
		{"missing id", map[string]any{"kind": "chat"}, `feed: malformed entry: missing field "id"`},
		{"bad id", map[string]any{"id": "evt_nope", "kind": "chat"}, `feed: malformed entry: invalid id "evt_nope"`},
		{"lower-case ulid", map[string]any{"id": strings.ToLower(goodID), "kind": "chat"}, "invalid id"},
		{"missing kind", map[string]any{"id": goodID}, `feed: malformed entry: missing field "kind"`},
		{"empty kind", map[string]any{"id": goodID, "kind": ""}, `feed: malformed entry: missing field "kind"`},
		{"missing id and kind", map[string]any{"player": "ana", "text": "hi"}, `feed: malformed entry: missing fields "id", "kind"`},
		{"missing id, empty kind", map[string]any{"kind": ""}, `feed: malformed entry: missing fields "id", "kind"`},
		{"bad id, missing kind", map[string]any{"id": "evt_nope"}, `feed: malformed entry: missing field "kind"; invalid id "evt_nope"`},
		{"oversized", map[string]any{"id": goodID, "kind": "chat", "text": strings.Repeat("a", event.MaxEntryBytes)}, "over the 8192 byte limit"},
		// An entry of exactly MaxEntryBytes fits; one byte more does not.
		{"exactly the limit", map[string]any{"id": goodID, "kind": "chat", "text": strings.Repeat("a", event.MaxEntryBytes-len("idkindchattext")-len(goodID))}, ""},
		{"a byte over the limit", map[string]any{"id": goodID, "kind": "chat", "text": strings.Repeat("a", event.MaxEntryBytes-len("idkindchattext")-len(goodID)+1)}, "over the 8192 byte limit"},
		{"invalid utf-8 value", map[string]any{"id": goodID, "kind": "chat", "text": "a\xffb"}, `field "text" is not valid UTF-8`},
		{"invalid utf-8 name", map[string]any{"id": goodID, "kind": "chat", "t\xfe": "x"}, "field name"},
		{"invalid utf-8 id", map[string]any{"id": "evt_\xff", "kind": "chat"}, `field "id" is not valid UTF-8`},
		{"two invalid fields name the first in order", map[string]any{"id": goodID, "kind": "chat", "zed": "\xff", "abc": "\xfe", "mid": "\xfd"}, `field "abc" is not valid UTF-8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := feed.Decode(key, redis.XMessage{ID: "1-1", Values: tt.values})
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if m.ID != goodID || m.Kind != tt.values["kind"] || m.Stream != key || m.Position != "1-1" {
					t.Errorf("message = %+v", m)
				}
				if _, ok := m.Payload["id"]; ok {
					t.Errorf("payload carries id: %v", m.Payload)
				}
				if len(m.Payload) != len(tt.values)-1 {
					t.Errorf("payload has %d fields, want %d", len(m.Payload), len(tt.values)-1)
				}
				return
			}
			if !errors.Is(err, feed.ErrMalformed) {
				t.Fatalf("Decode err = %v, want ErrMalformed", err)
			}
			if strings.HasPrefix(tt.reason, "feed: ") {
				if err.Error() != tt.reason {
					t.Errorf("reason %q, want %q", err, tt.reason)
				}
			} else if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("reason %q does not say %q", err, tt.reason)
			}
			if !utf8.ValidString(err.Error()) {
				t.Errorf("reason is not valid UTF-8: %q", err)
			}
		})
	}
}

// FuzzDecode checks Decode's invariants on arbitrary entries: it never
// panics; it accepts only entries within the limits, with a valid id and a
// kind; its reasons are valid UTF-8 and short.
func FuzzDecode(f *testing.F) {
	f.Add(goodID, "chat", "text", "hi", "")
	f.Add("", "chat", "text", "hi", "")
	f.Add("evt_nope", "guess", "guess", "🍎🍌", "")
	f.Add(goodID, "", "x", "y", "")
	f.Add(goodID, "chat", "text", "a\xffb", "")
	f.Add(goodID, "chat", "te\xc3", "b", "")
	f.Add(goodID, "chat", "text", strings.Repeat("x", 9000), "")
	f.Add(goodID, "<script>", "player", "<b>bob</b>", "extra")
	f.Add("evt_\xff"+goodID[5:], "chat", "", "", "id")
	f.Fuzz(func(t *testing.T, id, kind, name, value, extra string) {
		vals := map[string]any{}
		if id != "" {
			vals["id"] = id
		}
		if kind != "" {
			vals["kind"] = kind
		}
		vals[name] = value
		if extra != "" {
			vals[extra] = extra
		}
		m, err := feed.Decode("s", redis.XMessage{ID: "1-1", Values: vals})
		if err != nil {
			if !errors.Is(err, feed.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			if !utf8.ValidString(err.Error()) || len(err.Error()) > 400 {
				t.Fatalf("bad reason %q", err)
			}
			return
		}
		size := 0
		for k, v := range vals {
			size += len(k) + len(v.(string))
			if !utf8.ValidString(k) || !utf8.ValidString(v.(string)) {
				t.Fatalf("accepted invalid UTF-8 %q=%q", k, v)
			}
		}
		if size > event.MaxEntryBytes {
			t.Fatalf("accepted %d bytes", size)
		}
		if !event.ValidID(m.ID) || m.ID != vals["id"] {
			t.Fatalf("accepted id %q", m.ID)
		}
		if m.Kind == "" || m.Kind != m.Payload["kind"] {
			t.Fatalf("kind %q, payload %v", m.Kind, m.Payload)
		}
		if _, ok := m.Payload["id"]; ok {
			t.Fatal("payload carries id")
		}
	})
}

// TestFieldGivenTwiceTakesLast pins what docs/contracts.md says of an
// entry that repeats a field (Redis keeps both): the reader sees the last
// value, since go-redis reads an entry into a map.
func TestFieldGivenTwiceTakesLast(t *testing.T) {
	_, rdb := mustStart(t)
	s := stream("twice")
	got := make(chan feed.Message, 1)
	cfg := baseConfig(t, rdb, "r1", s)
	cfg.Handler = func(_ context.Context, m feed.Message) error {
		got <- m
		return nil
	}
	mustOpen(t, cfg)
	addRaw(t, rdb, s, "id", goodID, "kind", "chat", "player", "ana", "text", "first", "text", "last")
	select {
	case m := <-got:
		if m.Payload["text"] != "last" || m.ID != goodID {
			t.Fatalf("payload %v, id %s: want text=last", m.Payload, m.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the entry was not handled")
	}
}
