package gamesim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/wait"
)

// waitFor is wait.For: poll a condition with a deadline.
var waitFor = wait.For

// malformedReason applies the design's rules for malformed entries (not the
// simulator's own bookkeeping) and returns why an entry is malformed, or "".
func malformedReason(values map[string]any) string {
	fields := map[string]string{}
	size := 0
	for k, v := range values {
		s := v.(string)
		fields[k] = s
		size += len(k) + len(s)
		if !utf8.ValidString(k) || !utf8.ValidString(s) {
			return gamesim.BadInvalidUTF8
		}
	}
	id, ok := fields[event.FieldID]
	switch {
	case size > event.MaxEntryBytes:
		return gamesim.BadOversize
	case !ok:
		return gamesim.BadMissingID
	case !event.ValidID(id):
		return gamesim.BadInvalidID
	}
	kind, ok := fields[event.FieldKind]
	if !ok {
		return gamesim.BadMissingKind
	}
	delete(fields, event.FieldID)
	if err := event.Validate(kind, fields); err != nil {
		if strings.Contains(err.Error(), "missing field") {
			return gamesim.BadMissingField
		}
		return gamesim.BadInvalidField
	}
	return ""
}

func xrange(tb testing.TB, rdb *redis.Client, key string) []redis.XMessage {
	tb.Helper()
	msgs, err := rdb.XRange(context.Background(), key, "-", "+").Result()
	if err != nil {
		tb.Fatal(err)
	}
	return msgs
}

// checkStreams asserts that the streams hold exactly what sum says: the
// counts, which entries are malformed and why, monotone EVT ids, the good
// entries in the order Play makes them, and the registry's scores.
func checkStreams(t *testing.T, rdb *redis.Client, cfg gamesim.Config, sum gamesim.Summary) {
	t.Helper()
	ctx := context.Background()
	if len(sum.Games) != cfg.Games {
		t.Fatalf("summary has %d games, want %d", len(sum.Games), cfg.Games)
	}
	var total int64
	for i, g := range sum.Games {
		if want := gamesim.GameName(cfg.Prefix, i+1); g.Game != want || g.Stream != event.StreamKey(want) {
			t.Fatalf("game %d is %q on %q, want %q", i+1, g.Game, g.Stream, want)
		}
		msgs := xrange(t, rdb, g.Stream)
		if int64(len(msgs)) != g.Written() {
			t.Fatalf("%s: stream holds %d entries, summary says %d written", g.Game, len(msgs), g.Written())
		}
		bad := map[string]bool{}
		for _, p := range g.BadPositions {
			bad[p] = true
		}
		if int64(len(bad)) != g.Bad {
			t.Fatalf("%s: %d bad positions for %d bad entries", g.Game, len(bad), g.Bad)
		}
		reasons := map[string]int64{}
		var good []gamesim.Event
		var unknown int64
		lastID := ""
		for _, m := range msgs {
			reason := malformedReason(m.Values)
			if bad[m.ID] != (reason != "") {
				t.Fatalf("%s %s: simulator says bad=%v, rules say %q: %v", g.Game, m.ID, bad[m.ID], reason, m.Values)
			}
			if reason != "" {
				reasons[reason]++
			}
			if id, _ := m.Values[event.FieldID].(string); event.ValidID(id) {
				if id <= lastID {
					t.Fatalf("%s %s: EVT id %s not above %s", g.Game, m.ID, id, lastID)
				}
				lastID = id
			}
			at, err := time.Parse(time.RFC3339, fmt.Sprint(m.Values[event.FieldAt]))
			if reason == "" && (err != nil || len(fmt.Sprint(m.Values[event.FieldAt])) != len("2006-01-02T15:04:05.000Z")) {
				t.Fatalf("%s %s: at %v: want RFC 3339 UTC with milliseconds (%v)", g.Game, m.ID, m.Values[event.FieldAt], err)
			}
			if id, _ := m.Values[event.FieldID].(string); reason == "" && at.UnixMilli() > mustIDTime(t, id).UnixMilli() {
				t.Fatalf("%s %s: at %v after the id's time", g.Game, m.ID, at)
			}
			switch kind := m.Values[event.FieldKind]; {
			case reason != "":
			case kind == gamesim.UnknownKind:
				unknown++
			default:
				good = append(good, fromValues(m.Values))
			}
		}
		for _, r := range gamesim.BadReasons {
			if reasons[r] != g.Reasons[r] {
				t.Fatalf("%s: %d entries malformed by %s, summary says %d", g.Game, reasons[r], r, g.Reasons[r])
			}
		}
		if unknown != g.Unknown || g.Good-g.Unknown != int64(len(good)) {
			t.Fatalf("%s: %d unknown and %d known good, summary says %d of %d", g.Game, unknown, len(good), g.Unknown, g.Good)
		}
		if want := gamesim.Play(g.Game, gamesim.GameSeed(cfg.Seed, i+1), len(good)); !equalEvents(good, want) {
			t.Fatalf("%s: good entries are not the game Play makes", g.Game)
		}
		if lastID != g.LastID {
			t.Fatalf("%s: last EVT id %s, summary says %s", g.Game, lastID, g.LastID)
		}
		score, err := rdb.ZScore(ctx, event.RegistryKey, g.Game).Result()
		if err != nil || int64(score) != g.LastAt.UnixMilli() {
			t.Fatalf("%s: registry score %v (%v), want %d", g.Game, score, err, g.LastAt.UnixMilli())
		}
		if last := msgs[len(msgs)-1]; last.ID != g.LastPos || fmt.Sprint(last.Values[event.FieldAt]) != event.FormatAt(g.LastAt) {
			t.Fatalf("%s: last entry %s at %v, summary says %s at %v", g.Game, last.ID, last.Values[event.FieldAt], g.LastPos, g.LastAt)
		}
		total += g.Written()
	}
	if total != sum.Written() || sum.Good+sum.Bad != total {
		t.Fatalf("totals: %d in streams, summary %d good + %d bad", total, sum.Good, sum.Bad)
	}
}

func mustIDTime(t *testing.T, id string) time.Time {
	t.Helper()
	ts, ok := event.IDTime(id)
	if !ok {
		t.Fatalf("bad EVT id %q", id)
	}
	return ts
}

// fromValues rebuilds an Event from a stream entry, in Play's field order.
func fromValues(v map[string]any) gamesim.Event {
	e := gamesim.Event{Kind: fmt.Sprint(v[event.FieldKind])}
	for k, val := range v {
		if k != event.FieldID && k != event.FieldKind && k != event.FieldAt {
			e.Fields = append(e.Fields, gamesim.Field{Name: k, Value: val.(string)})
		}
	}
	return e
}

// equalEvents compares kinds and fields, ignoring field order.
func equalEvents(a, b []gamesim.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind != b[i].Kind || len(a[i].Fields) != len(b[i].Fields) {
			return false
		}
		for _, f := range b[i].Fields {
			if a[i].Get(f.Name) != f.Value {
				return false
			}
		}
	}
	return true
}
