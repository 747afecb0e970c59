package e2e_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goSources calls fn with each Go file under root that is no test, and its
// text: the code the docs tests hold the docs to. The test kits and test
// data are the tests', and var and bin hold no source.
func goSources(tb testing.TB, root string, fn func(path string, src []byte) error) {
	tb.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "var", "bin", "testdata", "testkit":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return fn(path, b)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// docPage is a page of the docs and its text.
type docPage struct{ path, text string }

// docPages returns README.md and docs/*.md with their text, but the
// benchmarks journal: a record of past days, whose names may since be
// gone.
func docPages(tb testing.TB) []docPage {
	tb.Helper()
	var pages []docPage
	for _, p := range append([]string{filepath.Join("..", "README.md")}, mustGlob(tb, filepath.Join("..", "docs", "*.md"))...) {
		if filepath.Base(p) == "benchmarks-journal.md" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		pages = append(pages, docPage{p, string(b)})
	}
	return pages
}
