package event

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestKindsAsContracted holds docs/contracts.md's table of kinds to the
// kinds Validate knows and the fields each requires: a kind or a field
// added, renamed or dropped on one side alone fails here.
func TestKindsAsContracted(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "contracts.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ((?:`[a-z_]+`(?:, )?)+) \\|")
	field := regexp.MustCompile("`([a-z_]+)`")
	doc := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		var fs []string
		for _, f := range field.FindAllStringSubmatch(m[2], -1) {
			fs = append(fs, f[1])
		}
		sort.Strings(fs)
		doc[m[1]] = fs
	}
	if len(doc) == 0 {
		t.Fatal("docs/contracts.md has no table of kinds")
	}
	for kind, rules := range required {
		var fs []string
		for f := range rules {
			fs = append(fs, f)
		}
		sort.Strings(fs)
		d, ok := doc[kind]
		switch {
		case !ok:
			t.Errorf("kind %s is known to Validate; docs/contracts.md's table of kinds has no row for it", kind)
		case !reflect.DeepEqual(d, fs):
			t.Errorf("kind %s: docs/contracts.md lists fields %s, Validate requires %s", kind, strings.Join(d, ", "), strings.Join(fs, ", "))
		}
	}
	for kind := range doc {
		if _, ok := required[kind]; !ok {
			t.Errorf("docs/contracts.md lists kind %s, which Validate does not know", kind)
		}
	}
}
