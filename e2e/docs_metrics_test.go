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

// metricDocs are the pages that name the renderer's metrics for operators
// (docs/operations.md, "Metrics", first). benchmarks-journal.md is a
// record of past runs and keeps the names they had.
var metricDocs = []string{
	"docs/operations.md", "docs/reader-law.md", "docs/store.md",
	"docs/contracts.md", "docs/live-page.md", "docs/benchmarks.md", "README.md",
}

// metricSources are the trees whose code registers the renderer's
// metrics (cmd/feedbench's own names are the benchmark's, not a replica's).
var metricSources = []string{"feed", "store", "web", "internal", "cmd/renderer"}

var (
	metricLiteral = regexp.MustCompile(`"(codemojex_(?:feed|store|web)_[a-z0-9_]+)"`)
	metricMention = regexp.MustCompile(`\bcodemojex_(?:feed|store|web)_[a-z0-9_]+`)
)

// TestMetricsDocumented holds the metric names in docs/ to the code: every
// metric a renderer registers is named in the docs, and every metric the
// docs name is one the code registers (a histogram's _bucket, _sum and
// _count series included), and every registered metric has a row (its
// first cell) in docs/operations.md's Metrics table. A metric added or
// renamed in the code alone fails here.
func TestMetricsDocumented(t *testing.T) {
	code := map[string]string{} // name → file that registers it
	for _, dir := range metricSources {
		err := filepath.WalkDir(filepath.Join("..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testkit" || d.Name() == "testdata" {
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
			for _, m := range metricLiteral.FindAllStringSubmatch(string(b), -1) {
				code[m[1]] = path
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(code) == 0 {
		t.Fatal("found no metric names in the code: the scan proves nothing")
	}

	var docs strings.Builder
	named := map[string]string{} // name → doc that names it
	for _, f := range metricDocs {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
		docs.WriteByte('\n')
		for _, m := range metricMention.FindAllString(string(b), -1) {
			if _, ok := named[m]; !ok {
				named[m] = f
			}
		}
	}

	var missing []string
	for name, path := range code {
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(docs.String()) {
			missing = append(missing, name+" ("+path+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("metric %s is registered but named in none of %v", m, metricDocs)
	}

	// Operators read the table of docs/operations.md, "Metrics": every
	// metric is a row there, whatever other pages say of it.
	b, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Metrics")
	if !ok {
		t.Fatal(`docs/operations.md has no "## Metrics" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	tabled := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "|") {
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
			for _, m := range metricMention.FindAllString(cell, -1) {
				tabled[m] = true
			}
		}
	}
	var untabled []string
	for name, path := range code {
		if !tabled[name] {
			untabled = append(untabled, name+" ("+path+")")
		}
	}
	sort.Strings(untabled)
	for _, m := range untabled {
		t.Errorf("metric %s is registered but has no row in docs/operations.md's Metrics table", m)
	}

	var unknown []string
	for name, f := range named {
		base := name
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(name, suffix); ok {
				if _, known := code[b]; known {
					base = b
				}
			}
		}
		if _, ok := code[base]; !ok {
			unknown = append(unknown, name+" ("+f+")")
		}
	}
	sort.Strings(unknown)
	for _, u := range unknown {
		t.Errorf("the docs name metric %s, which the code does not register", u)
	}
}
