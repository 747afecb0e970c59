package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/internal/testkit/storefile"
)

// TestPruneRefusesStoreSwappedSincePlan: prune reads its plan, and the
// highest seq it bounds its deletions by, from the -db file, and deletes
// from whatever file the path names once the removal is confirmed. A
// store put in its place meanwhile (a backup restored while the operator
// sat at the question) lost the planned games' lines, though the plan had
// never read it; and one moved in while the games were being removed kept
// the lines of the games after, which prune deleted from the unlinked
// file it held, said it had pruned, and took out of the registry. Prune
// now holds to the file it planned on (its device, inode and birth time,
// as a renderer recognises a copy): another file is refused, before
// anything is deleted from it, and the games not yet removed stay
// registered.
func TestPruneRefusesStoreSwappedSincePlan(t *testing.T) {
	for _, tc := range []struct {
		name string
		step string // when the backup is moved into place
		game string // before the removal of this game
		gone int    // games removed before it
	}{
		{name: "before the store is opened for writing", step: stepOpen},
		{name: "between two games", step: stepStore, game: "old-2", gone: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.MustStart(t)
			rdb := s.Client(t)
			ctx := context.Background()
			m := event.NewMinter(1)
			lines := map[string]int64{}
			for _, game := range []string{"old-1", "old-2"} {
				evs, end := playToGameOver(t, game)
				if _, err := gamesim.Append(ctx, rdb, m, game, evs[:end+1]...); err != nil {
					t.Fatal(err)
				}
				lines[game] = int64(end + 1)
			}
			dir := t.TempDir()
			path, backup := filepath.Join(dir, "feed.db"), filepath.Join(dir, "backup.db")
			mustRunCtl(t, s.Addr, "rebuild", "-db", path)
			storefile.Copy(t, path, backup)
			register(t, rdb, "old-1", twoDaysAgo())
			register(t, rdb, "old-2", twoDaysAgo().Add(time.Second))
			onPruneStep(t, tc.step, func(game string) {
				if game != tc.game {
					return
				}
				// Restored as docs/operations.md says, the renderers
				// stopped: the old file and its -wal and -shm removed,
				// the backup put in its place.
				for _, suffix := range []string{"-wal", "-shm"} {
					if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
						t.Error(err)
					}
				}
				if err := os.Rename(backup, path); err != nil {
					t.Error(err)
				}
			})
			out, errOut, err := runCtl(t, s.Addr, "prune", "-older-than", "24h", "-db", path, "-yes")
			if err == nil || !strings.Contains(err.Error(), "another file than the plan read") {
				t.Errorf("prune with the store swapped since its plan: %v, want it refused\n%s%s", err, out, errOut)
			}
			for i, game := range []string{"old-1", "old-2"} {
				if n := storedLines(t, path, game); n != lines[game] {
					t.Errorf("the store put in place holds %d lines of %s, want its %d\n%s", n, game, lines[game], out)
				}
				_, regErr := rdb.ZScore(ctx, event.RegistryKey, game).Result()
				if removed := i < tc.gone; removed != (regErr != nil) {
					t.Errorf("%s registered: %v; want it removed: %v\n%s", game, regErr, removed, out)
				}
			}
			if strings.Contains(out, "pruned") {
				t.Errorf("prune says it pruned:\n%s", out)
			}
		})
	}
}
