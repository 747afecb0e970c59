package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codemojex/feed/store"
)

// TestNewerSchemaLeftAsItWas: a deploy rolled back after the newer
// release migrated the host's file, its renderer killed with its last
// commits in the WAL alone. This release refuses the file, naming both
// versions, and leaves it as it was: the file and its -wal byte for byte,
// for the newer release to open again. Until 7 Dec 2026 Open switched
// it to WAL and began a migration before it read the version, and closing
// the refused writer, the file's last connection, checkpointed the newer
// release's WAL into the file and deleted it.
func TestNewerSchemaLeftAsItWas(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "feed.db")
	db, err := store.OpenWith(ctx, path, store.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	mustUpsert(t, db, []store.Event{mkEvent(t, "evt_01JD0000000000000000000001", "g", "chat", at, "player", "ann", "text", "hi")})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	newer, known := store.LatestSchema()+1, store.LatestSchema()
	children, release := startChildren(t, 1, "newer", path, envVersion+"="+strconv.Itoa(newer))
	c := children[0]
	release()
	if !c.stdout.Scan() || c.stdout.Text() != "ready" {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		t.Fatalf("newer release's child: %q\nstderr:\n%s", c.stdout.Text(), c.stderr.String())
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
	file, wal := mustRead(t, path), mustRead(t, path+"-wal")
	if len(wal) == 0 {
		t.Fatal("the newer release left no WAL: the test would prove nothing")
	}

	db, err = store.OpenWith(ctx, path, store.Options{Logger: quiet})
	if err == nil {
		db.Close()
		t.Fatal("Open took a file of a newer schema")
	}
	if !errors.Is(err, store.ErrSchemaNewer) ||
		!strings.Contains(err.Error(), fmt.Sprintf("version %d", newer)) || !strings.Contains(err.Error(), fmt.Sprintf("up to %d", known)) {
		t.Errorf("Open: %v; want ErrSchemaNewer naming version %d and %d", err, newer, known)
	}
	if !bytes.Equal(mustRead(t, path), file) {
		t.Error("the refused file was written")
	}
	if got, err := os.ReadFile(path + "-wal"); err != nil || !bytes.Equal(got, wal) {
		t.Errorf("the newer release's -wal: %d bytes (%v), want its %d bytes as they were", len(got), err, len(wal))
	}
	var v string
	if err := mustRaw(t, path).QueryRow(`SELECT value FROM meta WHERE key = 'newer'`).Scan(&v); err != nil {
		t.Errorf("the newer release's last commit: %v", err)
	}
}

// mustRead reads the file at path whole.
func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
