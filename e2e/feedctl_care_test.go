package e2e_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/testkit/proctest"
)

// feedctl runs feedctl with stdin from /dev/null (not a terminal) and
// returns its combined output and whether it exited 0.
func feedctl(tb testing.TB, redisURL string, args ...string) (string, bool) {
	tb.Helper()
	cmd := exec.Command(filepath.Join(proctest.Binaries(tb), "feedctl"), append([]string{"-redis", redisURL}, args...)...)
	out, err := cmd.CombinedOutput()
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		tb.Fatalf("feedctl %v: %v", args, err)
	}
	if bytes.IndexByte(out, 0x1b) >= 0 {
		tb.Fatalf("feedctl %v printed a raw ESC byte:\n%q", args, out)
	}
	return string(out), err == nil
}

// addDead writes a dead letter as the consumer does: the entry's fields
// and the dead_* ones.
func addDead(tb testing.TB, rdb *redis.Client, game string, fields ...string) string {
	tb.Helper()
	vals := append(fields, "dead_reason", "test", "dead_attempts", "5", "dead_consumer", "r1",
		"dead_stream_id", "1-1", "dead_at", time.Now().UTC().Format(time.RFC3339Nano))
	id, err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: event.DeadKey(game), Values: vals}).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// TestFeedctlCareful: destructive feedctl commands refuse without -yes when
// stdin is not a terminal, -dry-run changes nothing, requeue refuses what
// the renderer would dead-letter again unless fixed or forced, and an ESC
// in an entry is never printed raw (issue 12, items 5 and 6).
func TestFeedctlCareful(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	url := c.redis.URL()
	const game = "care-1"
	mint := event.NewMinter(7)
	badID := addDead(t, c.rdb, game, "id", "nope", "kind", "chat", "player", "ada", "text", "hi")
	badField := addDead(t, c.rdb, game, "id", mint.Next(time.Now()), "kind", "guess", "player", "ada",
		"round", "1", "guess", "🍎🍌", "exact", "abc", "near", "0")
	hostile := addDead(t, c.rdb, game, "id", mint.Next(time.Now()), "kind", "\x1b]0;pwned\a\x1b[2J", "player", "\x1b[31mada")
	if err := c.rdb.XAdd(ctx, &redis.XAddArgs{Stream: event.StreamKey(game), Values: []string{"id", mint.Next(time.Now()), "kind", "chat"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.rdb.ZAdd(ctx, event.RegistryKey, redis.Z{Score: 1, Member: game}).Err(); err != nil {
		t.Fatal(err)
	}
	// The renderers' group on the stream, as a renderer makes it: replay
	// refuses a stream no group reads.
	if err := c.rdb.XGroupCreate(ctx, event.StreamKey(game), c.group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	deadLen := func() int64 { n, _ := c.rdb.XLen(ctx, event.DeadKey(game)).Result(); return n }

	out, _ := feedctl(t, url, "dead", "list", "-game", game)
	if !strings.Contains(out, `\x1b]0;pwned\a\x1b[2J`) {
		t.Fatalf("dead list does not show the hostile kind escaped:\n%s", out)
	}
	if out, _ = feedctl(t, url, "status"); !strings.Contains(out, game) {
		t.Fatalf("status does not list %s:\n%s", game, out)
	}

	refusals := [][]string{
		{"dead", "drop", "-game", game, "-all"},
		{"dead", "drop", "-game", game, "-id", hostile},
		{"dead", "requeue", "-game", game, "-all", "-force"},
		{"replay", "-game", game},
	}
	for _, args := range refusals {
		out, ok := feedctl(t, url, args...)
		if ok || !strings.Contains(out, "-yes") {
			t.Fatalf("feedctl %v without a terminal or -yes: ok=%v\n%s", args, ok, out)
		}
	}
	if n := deadLen(); n != 3 {
		t.Fatalf("refused commands changed the dead letters: %d left, want 3", n)
	}
	existing := filepath.Join(t.TempDir(), "feed.db")
	openStore(t, existing)
	if out, ok := feedctl(t, url, "rebuild", "-db", existing); ok || !strings.Contains(out, "-yes") {
		t.Fatalf("rebuild onto an existing file without -yes: ok=%v\n%s", ok, out)
	}
	if out, ok := feedctl(t, url, "rebuild", "-db", filepath.Join(t.TempDir(), "new.db")); !ok {
		t.Fatalf("rebuild into a new file asks nothing: %s", out)
	}

	out, ok := feedctl(t, url, "dead", "drop", "-game", game, "-all", "-dry-run")
	if !ok || !strings.Contains(out, "3 dead letters of "+game+" would be dropped") || deadLen() != 3 {
		t.Fatalf("dead drop -dry-run: ok=%v, %d left\n%s", ok, deadLen(), out)
	}
	out, ok = feedctl(t, url, "replay", "-game", game, "-dry-run")
	if !ok || !strings.Contains(out, "would rewind") {
		t.Fatalf("replay -dry-run: %v\n%s", ok, out)
	}

	// Requeue: the two entries that would fail again are refused, the
	// well-formed one goes back.
	out, ok = feedctl(t, url, "dead", "requeue", "-game", game, "-all", "-dry-run")
	if ok || !strings.Contains(out, "refused "+badID) || !strings.Contains(out, "refused "+badField) || !strings.Contains(out, "would requeue "+hostile) {
		t.Fatalf("requeue -all -dry-run: ok=%v\n%s", ok, out)
	}
	if deadLen() != 3 {
		t.Fatal("requeue -dry-run changed the dead letters")
	}
	out, ok = feedctl(t, url, "dead", "requeue", "-game", game, "-all", "-yes")
	if ok || !strings.Contains(out, "requeued "+hostile) || !strings.Contains(out, "2 of 3 dead letters would fail again") || deadLen() != 2 {
		t.Fatalf("requeue -all -yes: ok=%v, %d left\n%s", ok, deadLen(), out)
	}
	if out, ok := feedctl(t, url, "dead", "requeue", "-game", game, "-id", badField); ok || deadLen() != 2 {
		t.Fatalf("requeue of an entry that fails again: ok=%v\n%s", ok, out)
	}
	if out, ok := feedctl(t, url, "dead", "requeue", "-game", game, "-id", badField, "-set", "exact=1"); !ok || deadLen() != 1 {
		t.Fatalf("requeue fixed by -set: ok=%v\n%s", ok, out)
	}
	if out, ok := feedctl(t, url, "dead", "requeue", "-game", game, "-id", badID, "-force"); !ok || deadLen() != 0 {
		t.Fatalf("requeue -force: ok=%v\n%s", ok, out)
	}
	n, _ := c.rdb.XLen(ctx, event.StreamKey(game)).Result()
	if n != 4 {
		t.Fatalf("stream holds %d entries, want the first and 3 requeued", n)
	}

	addDead(t, c.rdb, game, "id", "x", "kind", "chat")
	if out, ok := feedctl(t, url, "dead", "drop", "-game", game, "-all", "-yes"); !ok || deadLen() != 0 {
		t.Fatalf("dead drop -all -yes: ok=%v\n%s", ok, out)
	}
}
