package renderer_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/storefile"
	"github.com/codemojex/feed/internal/testkit/tmpfs"
	"github.com/codemojex/feed/internal/testkit/wait"
	"github.com/codemojex/feed/store"
)

// chats appends n valid chat events to game and returns their EVT ids.
func chats(t *testing.T, rdb redis.UniversalClient, m *event.Minter, game string, n int, text string) []string {
	t.Helper()
	evs := make([]gamesim.Event, n)
	for i := range evs {
		evs[i] = gamesim.Event{Kind: event.KindChat, Fields: []gamesim.Field{{Name: "player", Value: "ada"}, {Name: "text", Value: text}}}
	}
	var ids []string
	for len(evs) > 0 {
		k := min(len(evs), 100)
		got, err := gamesim.Append(context.Background(), rdb, m, game, evs[:k]...)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
		evs = evs[k:]
	}
	return ids
}

// eventually polls f until it returns nil, failing with its last error
// after d.
func eventually(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	var last error
	wait.Until(t, d, func() bool { last = f(); return last == nil }, func() string {
		return fmt.Sprintf("%s: %v", what, last)
	})
}

// readyz returns /readyz's status code and body.
func readyz(addr string) (int, string) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// shownOnce checks that db holds exactly ids for game, each once, and
// that the game's line count agrees (side effects applied once).
func shownOnce(db *store.DB, game string, ids []string) error {
	tl, err := db.Timeline(context.Background(), game)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for _, l := range tl {
		seen[l.EvtID]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			return fmt.Errorf("%s: %s shown %d times (%d lines)", game, id, seen[id], len(tl))
		}
	}
	if len(tl) != len(ids) {
		return fmt.Errorf("%s: %d lines, want %d", game, len(tl), len(ids))
	}
	g, err := db.Game(context.Background(), game)
	if err != nil {
		return err
	}
	if g.Events != int64(len(ids)) {
		return fmt.Errorf("%s: game counts %d events, want %d", game, g.Events, len(ids))
	}
	return nil
}

func deadCount(t *testing.T, rdb redis.UniversalClient, games ...string) int64 {
	t.Helper()
	var n int64
	for _, g := range games {
		l, err := rdb.XLen(context.Background(), event.DeadKey(g)).Result()
		if err != nil {
			t.Fatal(err)
		}
		n += l
	}
	return n
}

// TestFullDisk: the store on a full tmpfs. While it is full /readyz is 503
// and nothing is dead-lettered however long it lasts (well past
// poison-after × min-idle); once space returns every entry is shown once
// and /readyz is 200.
func TestFullDisk(t *testing.T) {
	tmpfs.Require(t)
	dir := tmpfs.MustMount(t, "16m")
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	m := MustRunMain(t, rs.URL(), filepath.Join(dir, "feed.db"), "r1", "-poison-after", "3", "-min-idle", "1s")
	mint := event.NewMinter(1)
	ids := chats(t, rdb, mint, "full", 20, "before")
	proctest.WaitFor(t, 10*time.Second, func() bool { return shownOnce(m.DB(), "full", ids) == nil }, "first lines stored")

	filler := tmpfs.MustFill(t, dir)
	ids = append(ids, chats(t, rdb, mint, "full", 600, strings.Repeat("é", 280))...)
	eventually(t, 20*time.Second, "/readyz 503 saying the disk is full", func() error {
		if code, body := readyz(m.Addr()); code != http.StatusServiceUnavailable || !strings.Contains(body, "full") {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	// Hold the disk full for longer than poison-after × min-idle, checking
	// the invariants on a beat (an assertion over a window, not a wait).
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); <-tick.C {
		if code, b := readyz(m.Addr()); code != http.StatusServiceUnavailable {
			t.Fatalf("/readyz %d while the disk is full: %s", code, b)
		}
		if n := deadCount(t, rdb, "full"); n != 0 {
			t.Fatalf("%d dead letters while the disk is full", n)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "every entry shown once after space returned", func() error { return shownOnce(m.DB(), "full", ids) })
	proctest.WaitFor(t, 10*time.Second, func() bool { code, _ := readyz(m.Addr()); return code == http.StatusOK }, "/readyz 200 again")
	if n := deadCount(t, rdb, "full"); n != 0 {
		t.Fatalf("%d dead letters after a full disk", n)
	}
}

// TestDeletedStore: the store file deleted under a running renderer turns
// /readyz 503 within seconds; after a restart every earlier and later entry
// of every game is shown, once.
func TestDeletedStore(t *testing.T) {
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	path := filepath.Join(t.TempDir(), "feed.db")
	m := MustRunMain(t, rs.URL(), path, "r1", "-file-check", "200ms")
	mint := event.NewMinter(2)
	games := []string{"del-a", "del-b"}
	ids := map[string][]string{}
	for _, g := range games {
		ids[g] = chats(t, rdb, mint, g, 100, "before")
	}
	for _, g := range games {
		proctest.WaitFor(t, 20*time.Second, func() bool { return shownOnce(m.DB(), g, ids[g]) == nil }, "%s stored", g)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	start := time.Now()
	eventually(t, 5*time.Second, "/readyz 503 after the store was deleted", func() error {
		if code, body := readyz(m.Addr()); code != http.StatusServiceUnavailable || !strings.Contains(body, "deleted or replaced") {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	t.Logf("/readyz 503 %v after the delete", time.Since(start).Round(time.Millisecond))
	for _, g := range games {
		ids[g] = append(ids[g], chats(t, rdb, mint, g, 50, "after")...)
	}
	if err := m.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	m2 := MustRunMain(t, rs.URL(), path, "r1")
	for _, g := range games {
		eventually(t, 30*time.Second, g+": every entry shown once after the restart", func() error { return shownOnce(m2.DB(), g, ids[g]) })
	}
	if n := deadCount(t, rdb, games...); n != 0 {
		t.Errorf("%d dead letters", n)
	}
}

// TestRestoredOlderBackup: an online copy of the store is taken, the
// renderer goes on, then the old copy is put back and the renderer
// restarted: it catches up, nothing lost or doubled.
func TestRestoredOlderBackup(t *testing.T) {
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	dir := t.TempDir()
	path, backup := filepath.Join(dir, "feed.db"), filepath.Join(dir, "backup.db")
	m := MustRunMain(t, rs.URL(), path, "r1")
	mint := event.NewMinter(3)
	ids := chats(t, rdb, mint, "bak", 80, "old")
	proctest.WaitFor(t, 20*time.Second, func() bool { return shownOnce(m.DB(), "bak", ids) == nil }, "stored")
	takeBackup(t, path, backup)
	ids = append(ids, chats(t, rdb, mint, "bak", 120, "new")...)
	proctest.WaitFor(t, 20*time.Second, func() bool { return shownOnce(m.DB(), "bak", ids) == nil }, "stored after the backup")
	if err := m.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	restoreBackup(t, backup, path)
	m2 := MustRunMain(t, rs.URL(), path, "r1")
	var last error
	proctest.WaitFor(t, 30*time.Second, func() bool {
		last = shownOnce(m2.DB(), "bak", ids)
		return last == nil
	}, "restored store caught up (%v)", last)
}

// TestDeletedGameComesBackClean: a game deleted from the store and the
// registry (feedctl prune, without -streams) whose stream then gets a new
// match under the same name shows the new match's line only, once a
// renderer reads it again. The store keeps the game's stream position
// through DeleteGame (docs/store.md), so the renderer's catch-up does not
// take the store for one that lost the game and re-read its old entries
// into it (it did, the 20 of them, with the position deleted too).
func TestDeletedGameComesBackClean(t *testing.T) {
	ctx := context.Background()
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	path := filepath.Join(t.TempDir(), "feed.db")
	m := MustRunMain(t, rs.URL(), path, "r1")
	mint := event.NewMinter(12)
	old := chats(t, rdb, mint, "again", 20, "old match")
	proctest.WaitFor(t, 20*time.Second, func() bool { return shownOnce(m.DB(), "again", old) == nil }, "old match stored")
	// Acked, as prune wants it before it removes a game.
	key := event.StreamKey("again")
	proctest.WaitFor(t, 20*time.Second, func() bool {
		gs, err := rdb.XInfoGroups(ctx, key).Result()
		return err == nil && len(gs) == 1 && gs[0].Pending == 0 && gs[0].Lag == 0
	}, "old match acked")
	if err := m.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := db.DeleteGame(ctx, "again"); err != nil || n != int64(len(old)) {
		t.Fatalf("DeleteGame = %d, %v; want %d lines removed", n, err, len(old))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZRem(ctx, event.RegistryKey, "again").Err(); err != nil {
		t.Fatal(err)
	}

	fresh := chats(t, rdb, mint, "again", 1, "new match")
	m2 := MustRunMain(t, rs.URL(), path, "r1")
	// A stream is caught up before it is read: once the new line is in,
	// whatever the catch-up would bring back is in too.
	proctest.WaitFor(t, 20*time.Second, func() bool {
		l, err := m2.DB().Timeline(ctx, "again")
		return err == nil && slices.ContainsFunc(l, func(l store.Line) bool { return l.EvtID == fresh[0] })
	}, "the new match's line stored")
	if err := shownOnce(m2.DB(), "again", fresh); err != nil {
		t.Errorf("deleted game back: %v (want the new match's line only)", err)
	}
}

// TestRedisComesBackEmpty: Redis loses everything (FLUSHALL); the
// renderer re-creates what it needs, the store keeps every line, new
// entries are shown, and the status page says what happened.
func TestRedisComesBackEmpty(t *testing.T) {
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	m := MustRunMain(t, rs.URL(), filepath.Join(t.TempDir(), "feed.db"), "r1")
	mint := event.NewMinter(4)
	ids := chats(t, rdb, mint, "empty", 30, "before")
	proctest.WaitFor(t, 20*time.Second, func() bool { return shownOnce(m.DB(), "empty", ids) == nil }, "stored")
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "status says Redis lost its data", func() error {
		resp, err := http.Get("http://" + m.Addr() + "/api/status")
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "Redis lost its data") {
			return fmt.Errorf("status: %s", b)
		}
		return nil
	})
	ids = append(ids, chats(t, rdb, mint, "empty", 20, "after")...)
	var last error
	proctest.WaitFor(t, 20*time.Second, func() bool {
		last = shownOnce(m.DB(), "empty", ids)
		return last == nil
	}, "old and new lines shown once (%v)", last)
	if code, body := readyz(m.Addr()); code != http.StatusOK {
		t.Errorf("/readyz %d: %s", code, body)
	}
}

// TestForgedStreamPositionKeepsFutureBound: a hostile producer that picks
// its stream entry's id itself (XADD with an explicit position a year
// ahead) cannot smuggle an EVT id from the same future past -future-bound:
// the entry is dead-lettered as "future id", the game keeps its title, and
// the genuine entries after it (whose positions the forged one dragged
// into the future) are still shown.
func TestForgedStreamPositionKeepsFutureBound(t *testing.T) {
	ctx := context.Background()
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	m := MustRunMain(t, rs.URL(), filepath.Join(t.TempDir(), "feed.db"), "r1")
	mint := event.NewMinter(5)
	started := gamesim.Event{Kind: event.KindGameStarted, Fields: []gamesim.Field{
		{Name: "title", Value: "Real"}, {Name: "rounds", Value: "3"},
		{Name: "code_length", Value: "4"}, {Name: "palette", Value: "🍎🍐🍊🍋🍌🍉"}}}
	ids, err := gamesim.Append(ctx, rdb, mint, "forge", started)
	if err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, 10*time.Second, func() bool { return shownOnce(m.DB(), "forge", ids) == nil }, "game_started stored")

	yearAhead := time.Now().Add(365 * 24 * time.Hour)
	for _, f := range []struct {
		pos string    // the stream position the producer picks
		at  time.Time // its EVT id's time
	}{
		{fmt.Sprintf("%d-0", yearAhead.UnixMilli()), yearAhead},                 // both a year ahead
		{"18446744073709551614-0", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}, // past what int64 holds
	} {
		forged := started
		forged.Fields = append([]gamesim.Field{{Name: "title", Value: "Owned"}}, started.Fields[1:]...)
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: event.StreamKey("forge"), ID: f.pos,
			Values: forged.Entry(event.NewMinter(6).Next(f.at), time.Now())}).Err(); err != nil {
			t.Fatalf("XADD %s: %v", f.pos, err)
		}
		// A genuine entry after it, to know the forged one was handled.
		more, err := gamesim.Append(ctx, rdb, mint, "forge", gamesim.Event{Kind: event.KindChat,
			Fields: []gamesim.Field{{Name: "player", Value: "ada"}, {Name: "text", Value: "after " + f.pos}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, more...)
		proctest.WaitFor(t, 10*time.Second, func() bool {
			l, err := m.DB().Timeline(ctx, "forge")
			return err == nil && len(l) > 0 && slices.ContainsFunc(l, func(l store.Line) bool { return l.EvtID == more[0] })
		}, "genuine entry after the forged one at %s shown", f.pos)
		if err := shownOnce(m.DB(), "forge", ids); err != nil {
			t.Errorf("forged entry at %s: %v", f.pos, err)
		}
		g, err := m.DB().Game(ctx, "forge")
		if err != nil {
			t.Fatal(err)
		}
		if g.Title != "Real" {
			t.Errorf("forged entry at %s: title %q, want %q", f.pos, g.Title, "Real")
		}
	}
	dead, err := feed.ListDead(ctx, rdb, event.DeadKey("forge"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 2 {
		t.Fatalf("%d dead letters, want the 2 forged entries", len(dead))
	}
	for _, d := range dead {
		if !strings.HasPrefix(d.Reason, "future id") {
			t.Errorf("dead letter %s: reason %q, want future id", d.EvtID, d.Reason)
		}
	}
}

// TestRestoredBackupTakenMidFlight: an online copy is taken while one
// replica's batch is in flight and a newer one is already committed (the
// replicas of a host commit in any order); the older batch is committed
// and acked after the copy, and the game goes quiet. Put back, the copy's
// position is the group's cursor, yet it lacks that batch: after a
// restart every entry is shown, once.
//
// The copy is put back both ways an operator does: moved into place (its
// own inode), and copied in after the old file was removed, where ext4
// gives the copy the removed file's inode number.
func TestRestoredBackupTakenMidFlight(t *testing.T) {
	t.Run("moved", func(t *testing.T) { restoredBackupTakenMidFlight(t, restoreBackup) })
	t.Run("copied onto the old inode", func(t *testing.T) { restoredBackupTakenMidFlight(t, restoreBackupOnOldInode) })
}

func restoredBackupTakenMidFlight(t *testing.T, restore func(testing.TB, string, string)) {
	ctx := context.Background()
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	dir := t.TempDir()
	path, backup := filepath.Join(dir, "feed.db"), filepath.Join(dir, "backup.db")
	mint := event.NewMinter(7)
	key := event.StreamKey("midflight")

	// Replica r2 reads the first ten entries and is slow to commit them.
	ids := chats(t, rdb, mint, "midflight", 10, "in flight")
	if err := rdb.XGroupCreate(ctx, key, "feed", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "feed", Consumer: "r2", Streams: []string{key, ">"}, Count: 10}).Err(); err != nil {
		t.Fatal(err)
	}
	// Replica r1 commits the next ten meanwhile; the copy is taken then.
	later := chats(t, rdb, mint, "midflight", 10, "committed first")
	m1 := MustRunMain(t, rs.URL(), path, "r1", "-min-idle", "10m")
	proctest.WaitFor(t, 20*time.Second, func() bool { return shownOnce(m1.DB(), "midflight", later) == nil }, "later batch stored")
	takeBackup(t, path, backup)
	if err := m1.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	// r2 comes back, commits and acks its batch; the game is over.
	ids = append(ids, later...)
	m2 := MustRunMain(t, rs.URL(), path, "r2")
	proctest.WaitFor(t, 20*time.Second, func() bool { return shownOnce(m2.DB(), "midflight", ids) == nil }, "every entry stored")
	proctest.WaitFor(t, 10*time.Second, func() bool {
		p, err := rdb.XPending(ctx, key, "feed").Result()
		return err == nil && p.Count == 0
	}, "nothing pending")
	if err := m2.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	restore(t, backup, path)
	m3 := MustRunMain(t, rs.URL(), path, "r1")
	eventually(t, 20*time.Second, "restored copy shows every entry once", func() error { return shownOnce(m3.DB(), "midflight", ids) })
}

// takeBackup copies the store at path to backup as operations.md says to,
// with SQLite's VACUUM INTO, while it is written.
func takeBackup(tb testing.TB, path, backup string) {
	tb.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		tb.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`VACUUM INTO ?`, backup); err != nil {
		tb.Fatal(err)
	}
}

// restoreBackup puts the backup in place of the store at path, as an
// operator does with the renderer stopped: the file and its WAL go, the
// backup is moved in (its own inode).
func restoreBackup(tb testing.TB, backup, path string) {
	tb.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	if err := os.Rename(backup, path); err != nil {
		tb.Fatal(err)
	}
}

// restoreBackupOnOldInode puts the backup in place of the store at path as
// `rm feed.db*; cp backup feed.db` does, on the inode number the removed
// file had: ext4 hands out the lowest free inode, so empty files made here
// hold the others freed with it until that one comes up, and the backup is
// written into that one. Another process of the machine (a parallel test)
// may take the freed number first; the files made here then go on holding
// every number it frees until it frees that one, for up to 20 s (the
// test fails, or skips outside CI, on a filesystem that does not reuse it).
func restoreBackupOnOldInode(tb testing.TB, backup, path string) {
	tb.Helper()
	ino := func(p string) uint64 {
		fi, err := os.Stat(p)
		if err != nil {
			tb.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	old := ino(path)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	data, err := os.ReadFile(backup)
	if err != nil {
		tb.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 50000 && time.Now().Before(deadline); i++ {
		hold := fmt.Sprintf("%s.hold%d", path, i)
		if err := os.WriteFile(hold, nil, 0o644); err != nil {
			tb.Fatal(err)
		}
		if ino(hold) != old {
			continue
		}
		if err := os.WriteFile(hold, data, 0o644); err != nil { // truncates: the same inode
			tb.Fatal(err)
		}
		if err := os.Rename(hold, path); err != nil { // keeps the inode
			tb.Fatal(err)
		}
		return
	}
	tmpfs.SkipOrFail(tb, fmt.Errorf("the filesystem under %s did not hand out inode %d again", path, old))
}

// TestStatusWithRedisDown: with Redis gone, /api/status says so (503, its
// error) and still names the replica's group, which it knows without
// Redis; it answered an empty group.
func TestStatusWithRedisDown(t *testing.T) {
	rs := redistest.MustStart(t)
	m := MustRunMain(t, rs.URL(), filepath.Join(t.TempDir(), "feed.db"), "r1", "-group", "grp-down")
	rs.Kill(t)
	var st struct {
		Group string `json:"group"`
		Error string `json:"error"`
	}
	eventually(t, 20*time.Second, "a status that names the group and the error", func() error {
		resp, err := http.Get("http://" + m.Addr() + "/api/status")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusServiceUnavailable || st.Error == "" || st.Group != "grp-down" {
			return fmt.Errorf("status %d, group %q, error %q", resp.StatusCode, st.Group, st.Error)
		}
		return nil
	})
}

// TestWriteLockHeldOutside: another process (an operator's sqlite3 left in
// a transaction, a stuck tool) holds the store's write lock for longer than
// the store waits for it. The renderer pauses and says so on /readyz, acks
// nothing it has not stored and dead-letters nothing; once the lock is let
// go it resumes by itself and every entry is shown once. Before 5 Dec 2026
// the batch waited for the lock for good, /readyz said 200 and nothing was
// logged above DEBUG.
func TestWriteLockHeldOutside(t *testing.T) {
	ctx := context.Background()
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	path := filepath.Join(t.TempDir(), "feed.db")
	m := MustRunMain(t, rs.URL(), path, "r1", "-poison-after", "3", "-min-idle", "1s")
	mint := event.NewMinter(8)
	ids := chats(t, rdb, mint, "locked", 20, "before")
	proctest.WaitFor(t, 10*time.Second, func() bool { return shownOnce(m.DB(), "locked", ids) == nil }, "first lines stored")

	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	holder, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	held := time.Now()
	ids = append(ids, chats(t, rdb, mint, "locked", 30, "while locked")...)
	eventually(t, store.DefaultLockWait+20*time.Second, "/readyz 503 saying the store is locked", func() error {
		if code, body := readyz(m.Addr()); code != http.StatusServiceUnavailable || !strings.Contains(body, "locked") {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	t.Logf("/readyz 503 %v after the lock was taken", time.Since(held).Round(time.Millisecond))
	// Nothing of the locked batch may be acked: it is not stored.
	p, err := rdb.XPending(ctx, event.StreamKey("locked"), "feed").Result()
	if err != nil {
		t.Fatal(err)
	}
	if p.Count == 0 {
		t.Fatal("nothing pending while the store is locked: entries acked before they were stored")
	}
	if n := deadCount(t, rdb, "locked"); n != 0 {
		t.Fatalf("%d dead letters while the store is locked", n)
	}
	if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "every entry shown once after the lock was let go", func() error { return shownOnce(m.DB(), "locked", ids) })
	proctest.WaitFor(t, 10*time.Second, func() bool { code, _ := readyz(m.Addr()); return code == http.StatusOK }, "/readyz 200 again")
	proctest.WaitFor(t, 10*time.Second, func() bool {
		p, err := rdb.XPending(ctx, event.StreamKey("locked"), "feed").Result()
		return err == nil && p.Count == 0
	}, "nothing pending")
	if n := deadCount(t, rdb, "locked"); n != 0 {
		t.Fatalf("%d dead letters after the lock", n)
	}
	if s := m.Consumer().Stats(); s.Pauses == 0 {
		t.Errorf("Stats.Pauses = 0 after a pause")
	}
}

// TestTruncatedStore: the store file truncated in place under a running
// renderer (`: > feed.db`; it keeps its inode) turns /readyz 503 within
// seconds and stops consuming, as a deleted file does, where the renderer
// went on acking lines its checkpoints wrote into a malformed file, which
// its restart then refused to open. After a restart every earlier and
// later entry is shown, once: the empty file is caught up from the
// streams.
func TestTruncatedStore(t *testing.T) {
	rs := redistest.MustStart(t)
	rdb := rs.Client(t)
	path := filepath.Join(t.TempDir(), "feed.db")
	m := MustRunMain(t, rs.URL(), path, "r1", "-file-check", "200ms")
	mint := event.NewMinter(9)
	ids := chats(t, rdb, mint, "trunc", 100, "before")
	proctest.WaitFor(t, 20*time.Second, func() bool { return shownOnce(m.DB(), "trunc", ids) == nil }, "stored")
	// Quiet, as a moment after a commit: every line is in the main file.
	// (With lines still only in the WAL, SQLite's checkpoint as the last
	// connection closes writes them into the emptied file, a malformed
	// one the restart refuses: docs/operations.md.)
	storefile.Checkpointed(t, path)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "/readyz 503 after the store was truncated", func() error {
		if code, body := readyz(m.Addr()); code != http.StatusServiceUnavailable || !strings.Contains(body, "truncated in place") {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	ids = append(ids, chats(t, rdb, mint, "trunc", 50, "after")...)
	if err := m.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	m2 := MustRunMain(t, rs.URL(), path, "r1")
	eventually(t, 30*time.Second, "every entry shown once after the restart", func() error { return shownOnce(m2.DB(), "trunc", ids) })
	if n := deadCount(t, rdb, "trunc"); n != 0 {
		t.Errorf("%d dead letters", n)
	}
}
