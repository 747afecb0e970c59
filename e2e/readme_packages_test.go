package e2e_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestREADMEPackages holds the README's table of packages ("Data flows
// stream → feed → store → web → browser") to the tree: every directory
// with Go code is named in it (`internal/event`, `feed/`, a test kit by its
// name in internal/testkit's row), and every package the table names
// exists. A package added or moved without the table fails here.
func TestREADMEPackages(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `") {
			rows = append(rows, line)
		}
	}
	cell := regexp.MustCompile("`([a-z0-9/]+?)/?`")
	named := map[string]bool{} // directories the first cells name
	var kits string            // internal/testkit's row
	for _, r := range rows {
		first, _, _ := strings.Cut(strings.TrimPrefix(r, "| "), " | ")
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			named[m[1]] = true
			if m[1] == "internal/testkit" {
				kits = r
			}
		}
	}
	if len(named) == 0 || kits == "" {
		t.Fatal("README has no table of packages with internal/testkit's row")
	}

	var missing []string
	root := ".."
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel := strings.TrimPrefix(filepath.ToSlash(path), "../")
		if n := d.Name(); n == ".git" || n == "testdata" || n == "var" || n == "bin" || strings.HasPrefix(n, ".") && path != root {
			return filepath.SkipDir
		}
		if path == root || !hasGoCode(t, path) {
			return nil
		}
		switch {
		case named[rel]:
		case strings.HasPrefix(rel, "internal/testkit/"):
			if !strings.Contains(kits, "`"+strings.TrimPrefix(rel, "internal/testkit/")+"`") {
				missing = append(missing, rel+" (in internal/testkit's row)")
			}
		case strings.HasPrefix(rel, "cmd/") && named["cmd"]:
			// the binaries: cmd/ names them all
		default:
			missing = append(missing, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("package %s is not in the README's table of packages", m)
	}
	for n := range named {
		if _, err := os.Stat(filepath.Join(root, n)); err != nil {
			t.Errorf("the README's table of packages names %s, which does not exist", n)
		}
	}
}

// hasGoCode reports whether dir holds a Go file other than a test.
func hasGoCode(t *testing.T, dir string) bool {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}
