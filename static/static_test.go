package static_test

import (
	"crypto/sha256"
	"encoding/hex"
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

func TestPathUnknownPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Path of an unknown asset did not panic")
		}
	}()
	static.Path("nope.js")
}
