package bench_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/cmd/feedbench/internal/bench"
	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// A renderer whose address was taken before it bound it is started again
// on another one, and WaitReady returns once that one serves: a port can
// be taken between FreeAddr's probe and the bind, and a run of many
// minutes failed on it.
func TestWaitReadyAddressTaken(t *testing.T) {
	bin := filepath.Join(proctest.Binaries(t), "renderer")
	srv := redistest.MustStart(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().String()
	dir := t.TempDir()
	r, err := bench.StartRendererAt(bin, bench.RendererArgs{RedisURL: srv.URL(), DB: filepath.Join(dir, "feed.db"),
		Consumer: "taken-1", LogDir: dir}, taken)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.WaitReady(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if r.Addr == taken || r.Exited() {
		t.Fatalf("serving on %s (exited %v), taken %s: want another address", r.Addr, r.Exited(), taken)
	}
	log, err := os.ReadFile(filepath.Join(dir, "renderer-taken-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), taken+" was taken; starting again on "+r.Addr) {
		t.Fatalf("log does not say why it moved:\n%s", log)
	}
}
