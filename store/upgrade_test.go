package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/storefile"
	"github.com/codemojex/feed/store"
)

// oldLine is a line as an earlier release wrote it: its payload encoded by
// encoding/json (the first releases' encoder, which the store's own
// matches byte for byte), its seq handed out by that release's file.
type oldLine struct {
	seq      int64
	evtID    string
	game     string
	payload  map[string]string
	html     string
	streamID string
}

// event is the line as the streams deliver it again (a catch-up, a
// replay, a peer's reclaim after the upgrade).
func (l oldLine) event() store.Event {
	return store.Event{EvtID: l.evtID, Game: l.game, Kind: l.payload["kind"], Payload: l.payload,
		HTML: l.html, StreamID: l.streamID, Renderer: "new", Attempts: 2}
}

// fillOldStore writes lines of three games into a file at schema version
// v as a release of that version did (positions from 0003 on), then
// deletes the newest game's lines, as feedctl prune does: the file's seq
// counter is then above its highest seq. It returns the lines kept and
// the counter.
func fillOldStore(t *testing.T, exec storefile.Exec, v int) (kept []oldLine, counter int64) {
	t.Helper()
	base := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	n := 0
	for _, g := range []string{"g1", "g2", "g1", "gone"} {
		exec(`INSERT OR IGNORE INTO games (name) VALUES (?)`, g)
		for range 3 {
			n++
			at := base.Add(time.Duration(n) * time.Second)
			l := oldLine{
				evtID: fmt.Sprintf("evt_01JD%022d", n), game: g,
				payload: map[string]string{"kind": "chat", "at": at.Format("2006-01-02T15:04:05.000Z"),
					"player": "<b>ann</b> & \u2028", "text": "hi " + strconv.Itoa(n) + ` "q" é 🦊`},
				html: "<p>line " + strconv.Itoa(n) + "</p>", streamID: strconv.FormatInt(at.UnixMilli(), 10) + "-0",
			}
			p, err := json.Marshal(l.payload)
			if err != nil {
				t.Fatal(err)
			}
			exec(`INSERT INTO events (evt_id, game, kind, payload, html, stream_id, renderer, attempts, at, stored_at)
				VALUES (?, ?, 'chat', ?, ?, ?, 'old', 1, ?, 1)`, l.evtID, g, string(p), l.html, l.streamID, at.UnixNano())
			l.seq = int64(n) // a new file numbers from 1
			if v >= 3 {
				exec(`INSERT INTO positions (game, ms, seq) VALUES (?, ?, 0)
					ON CONFLICT (game) DO UPDATE SET ms = max(ms, excluded.ms)`, g, at.UnixMilli())
			}
			if g != "gone" {
				kept = append(kept, l)
			}
		}
	}
	exec(`DELETE FROM events WHERE game = 'gone'`)
	exec(`DELETE FROM games WHERE name = 'gone'`)
	return kept, int64(n)
}

// TestUpgradeFromEachSchema: a store file as each earlier release left it
// (the migrations up to its version applied, lines and positions written
// as it wrote them, a pruned game's newest lines gone) opens under this
// binary and is migrated to the newest version; it keeps every line with
// its seq, its store id (0001's files had none: 0002 makes one) and its
// positions, so a browser's cursor (store id, seq, the EVT id held last)
// stays valid. The lines come again from the streams unchanged (a
// catch-up, a replay): each is a duplicate, no conflict, and a new line
// takes a seq above every seq the old release handed out. A second open
// finds the same file, not a copy.
func TestUpgradeFromEachSchema(t *testing.T) {
	ctx := context.Background()
	for v := 1; v <= store.LatestSchema(); v++ {
		t.Run(fmt.Sprintf("version_%d", v), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "feed.db")
			var kept []oldLine
			var counter int64
			storefile.AtSchema(t, path, v, func(exec storefile.Exec) { kept, counter = fillOldStore(t, exec, v) })
			oldID := ""
			if v >= 2 {
				if err := mustRaw(t, path).QueryRow(`SELECT value FROM meta WHERE key = 'store_id'`).Scan(&oldID); err != nil {
					t.Fatal(err)
				}
			}

			db, err := store.OpenWith(ctx, path, store.Options{Logger: quiet})
			if err != nil {
				t.Fatalf("open a version %d file: %v", v, err)
			}
			id, err := db.ID(ctx)
			if err != nil || id == "" || (oldID != "" && id != oldID) {
				t.Errorf("store id %q (%v), want %q kept (a new one for a file without)", id, err, oldID)
			}
			if hs, err := db.HighSeq(ctx); err != nil || hs != counter {
				t.Errorf("HighSeq %d (%v), want %d, the highest seq the old release handed out", hs, err, counter)
			}
			for _, g := range []string{"g1", "g2"} {
				lines, err := db.Timeline(ctx, g)
				if err != nil {
					t.Fatal(err)
				}
				var want []oldLine
				for _, l := range kept {
					if l.game == g {
						want = append(want, l)
					}
				}
				if len(lines) != len(want) {
					t.Fatalf("game %s: %d lines after the upgrade, want %d", g, len(lines), len(want))
				}
				for i, l := range lines {
					if l.Seq != want[i].seq || l.EvtID != want[i].evtID || l.HTML != want[i].html {
						t.Errorf("game %s line %d: seq %d %s %q, want seq %d %s %q", g, i, l.Seq, l.EvtID, l.HTML,
							want[i].seq, want[i].evtID, want[i].html)
					}
				}
				pos, err := db.Position(ctx, g)
				wantPos := ""
				if v >= 3 {
					wantPos = want[len(want)-1].streamID
				}
				if err != nil || pos != wantPos {
					t.Errorf("game %s: position %q (%v), want %q", g, pos, err, wantPos)
				}
			}

			var again []store.Event
			for _, l := range kept {
				again = append(again, l.event())
			}
			for i, r := range mustUpsert(t, db, again) {
				if r.Inserted {
					t.Errorf("%s delivered again was inserted again", again[i].EvtID)
				}
			}
			fresh := oldLine{evtID: "evt_01JE0000000000000000000001", game: "g1",
				payload: map[string]string{"kind": "chat", "player": "bo", "text": "new"}, html: "<p>new</p>",
				streamID: strconv.FormatInt(time.Now().UnixMilli(), 10) + "-0"}
			res := mustUpsert(t, db, []store.Event{fresh.event()})
			if !res[0].Inserted || res[0].Seq <= counter {
				t.Errorf("a new line: inserted %v, seq %d; want a seq above %d", res[0].Inserted, res[0].Seq, counter)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			var top int
			if err := mustRaw(t, path).QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&top); err != nil || top != store.LatestSchema() {
				t.Errorf("schema version %d (%v) after the upgrade, want %d", top, err, store.LatestSchema())
			}
			db = MustOpen(t, path)
			if id2, err := db.ID(ctx); err != nil || id2 != id {
				t.Errorf("store id %q (%v) at the second open, want %q: the upgraded file taken for a copy", id2, err, id)
			}
		})
	}
}

// TestFailedMigrationLeavesOldVersion: a migration that fails part-way
// (here 0003, whose positions table is in the way, after it rebuilt the
// lines' table) changes nothing: Open fails naming it, and the file is
// the old release's as it was, its lines, seqs and tables, so that
// release opens it again; once the cause is gone, Open migrates it.
func TestFailedMigrationLeavesOldVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, ref := filepath.Join(dir, "feed.db"), filepath.Join(dir, "ref.db")
	var kept []oldLine
	storefile.AtSchema(t, path, 2, func(exec storefile.Exec) {
		kept, _ = fillOldStore(t, exec, 2)
		exec(`CREATE TABLE positions (x)`)
	})
	storefile.AtSchema(t, ref, 2, func(exec storefile.Exec) { exec(`CREATE TABLE positions (x)`) })
	before := schemaOf(t, path)

	db, err := store.OpenWith(ctx, path, store.Options{Logger: quiet})
	if err == nil {
		db.Close()
		t.Fatal("Open migrated a file on which 0003 fails")
	}
	if !strings.Contains(err.Error(), "0003_identity_positions.sql") {
		t.Errorf("Open: %v, want the failed migration named", err)
	}
	if got := schemaOf(t, path); got != before || got != schemaOf(t, ref) {
		t.Errorf("schema after the failed migration:\n%s\nwant the old release's:\n%s", got, before)
	}
	raw := mustRaw(t, path)
	top, n, ok := levelOf(t, raw)
	if top != 2 || n != len(kept) || ok != "ok" {
		t.Errorf("after the failed migration: version %d, %d lines, integrity %q; want 2, %d, ok", top, n, ok, len(kept))
	}
	if _, err := raw.Exec(`DROP TABLE positions`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db = MustOpen(t, path)
	for _, g := range []string{"g1", "g2"} {
		lines, err := db.Timeline(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			if want := kept[l.Seq-1]; l.EvtID != want.evtID || l.Game != want.game {
				t.Errorf("seq %d: %s of %s after the migration, want %s of %s", l.Seq, l.EvtID, l.Game, want.evtID, want.game)
			}
		}
	}
}

// levelOf reads what an interrupted or failed migration must leave as
// it was: the file's schema version, its lines, and its integrity check.
func levelOf(t *testing.T, raw *sql.DB) (version, lines int, integrity string) {
	t.Helper()
	if err := raw.QueryRow(`SELECT (SELECT max(version) FROM schema_migrations), (SELECT count(*) FROM events), (SELECT * FROM pragma_integrity_check)`).
		Scan(&version, &lines, &integrity); err != nil {
		t.Fatal(err)
	}
	return version, lines, integrity
}

// schemaOf lists the file's tables and indexes with their SQL, read-only.
func schemaOf(t *testing.T, path string) string {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query(`SELECT type, name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, q string
		if err := rows.Scan(&typ, &name, &q); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s: %s\n", typ, name, q)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
