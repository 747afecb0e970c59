package static_test

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"
	"testing"

	"github.com/codemojex/feed/static"
)

func TestAssets(t *testing.T) {
	names := static.Names()
	for _, want := range []string{"app.css", "app.js", "common.js", "replay.js", "status.js"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Fatalf("asset %s missing from %v", want, names)
		}
	}
	for _, n := range names {
		p := static.Path(n)
		hashed, ok := strings.CutPrefix(p, static.Prefix)
		if !ok {
			t.Fatalf("Path(%s) = %s, want under %s", n, p, static.Prefix)
		}
		a, ok := static.Lookup(hashed)
		if !ok || a.Name != n {
			t.Fatalf("Lookup(%s) = %+v, %v", hashed, a, ok)
		}
		sum := sha256.Sum256(a.Body)
		if !strings.Contains(hashed, "."+hex.EncodeToString(sum[:])[:10]+".") {
			t.Errorf("%s: name %s does not carry the content hash", n, hashed)
		}
		if _, ok := static.Lookup(n); ok {
			t.Errorf("unhashed %s is served", n)
		}
	}
}

// TestContentTypesFixed: every asset is served as its own type, whatever
// the host's MIME table says (this test binary's maps .js to text/plain
// and .css to application/octet-stream, hosttypes_test.go). The type came
// from mime.TypeByExtension, which a host's /etc/mime.types overrides, and
// with X-Content-Type-Options: nosniff a browser runs no script and applies
// no stylesheet of another type.
func TestContentTypesFixed(t *testing.T) {
	want := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	for _, n := range static.Names() {
		hashed, _ := strings.CutPrefix(static.Path(n), static.Prefix)
		a, _ := static.Lookup(hashed)
		if w := want[path.Ext(n)]; a.ContentType != w {
			t.Errorf("%s: Content-Type %q, want %q", n, a.ContentType, w)
		}
	}
}

func TestPathUnknownPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Path of an unknown asset did not panic")
		}
	}()
	static.Path("nope.js")
}
