package e2e_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNameVariablesThatExist: every environment variable of this
// project the README and docs/ name ($FEED_…, $GAMESIM_…, $FEEDCTL_…,
// RUN_… of make run, CODEMOJEX_… of the tests and CI, CHAOS_… of make
// chaos) is read somewhere: a Go file (flagenv's fallbacks, the test
// kits), the Makefile, scripts/ or .ci/. A variable renamed or dropped in
// the code alone leaves operators setting one nothing reads.
// benchmarks-journal.md keeps the names of its time.
func TestDocsNameVariablesThatExist(t *testing.T) {
	name := regexp.MustCompile(`\b(?:FEED|GAMESIM|FEEDCTL|RUN|CODEMOJEX|CHAOS)_[A-Z0-9_]*[A-Z0-9]\b`)
	var code strings.Builder
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "var" || n == "bin" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../"))
		if strings.HasSuffix(rel, ".md") {
			return nil
		}
		if !strings.HasSuffix(rel, ".go") && rel != "Makefile" && !strings.HasPrefix(rel, "scripts/") && !strings.HasPrefix(rel, ".ci/") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		code.Write(b)
		code.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]bool{}
	for _, m := range name.FindAllString(code.String(), -1) {
		read[m] = true
	}
	if !read["FEED_DB"] || !read["RUN_HTTP_PORT"] {
		t.Fatal("the scan found neither FEED_DB nor RUN_HTTP_PORT in the code: it proves nothing")
	}
	for _, pg := range docPages(t) {
		p, b := pg.path, pg.text
		seen := map[string]bool{}
		for _, v := range name.FindAllString(b, -1) {
			if !read[v] && !seen[v] {
				seen[v] = true
				t.Errorf("%s names %s, which nothing in the code, the Makefile, scripts/ or .ci/ reads", strings.TrimPrefix(p, "../"), v)
			}
		}
	}
}
