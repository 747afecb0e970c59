package e2e_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// staleCites are citations known to name a section their page does not
// have, in files that must not change: a released migration is never
// edited (migrations/migrations.go).
var staleCites = map[string]bool{
	`migrations/0004_drop_games_last_at.sql: docs/benchmarks.md, "the store's low-rate cost"`: true,
}

var (
	// docs/store.md, "Migrations" — in code comments and in the docs.
	citeQuoted = regexp.MustCompile(`((?:docs/)?[a-z-]+\.md|README\.md)\)?,? "([^"]{2,100})"`)
	// [text](operations.md#scaling-one-host-many-hosts-a-cluster)
	citeLink   = regexp.MustCompile(`\]\(((?:\.\./|docs/)?[A-Za-z-]+\.md)(#[a-z0-9-]+)?\)`)
	commentGap = regexp.MustCompile(`\n[ \t]*(?://|--|#|\*)?[ \t]*`)
	spaces     = regexp.MustCompile(`\s+`)
	notSlug    = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// TestDocCitesResolve: every citation of a docs page's section, in code
// comments (Go, templ, JS, CSS, SQL, the Makefile and scripts) and in the
// docs themselves, names a page that exists and text that page has (the
// quoted section), and every link between the pages points at a file and
// a heading that exist. A section renamed or moved in one place fails here.
func TestDocCitesResolve(t *testing.T) {
	root := ".."
	pages := map[string]string{} // path from root → its text, one space for each run of spaces
	anchors := map[string]map[string]bool{}
	for _, p := range append([]string{"README.md"}, mustGlob(t, filepath.Join(root, "docs", "*.md"))...) {
		rel := strings.TrimPrefix(filepath.ToSlash(p), "../")
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		pages[rel] = string(b)
		anchors[rel] = map[string]bool{}
		for _, line := range strings.Split(string(b), "\n") {
			if h, ok := strings.CutPrefix(line, "#"); ok {
				h = strings.TrimSpace(strings.TrimLeft(h, "#"))
				slug := strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
				anchors[rel][slug] = true
			}
		}
	}

	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "var" || n == "bin" || n == "testdata" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		ext := filepath.Ext(name)
		switch {
		case strings.HasSuffix(name, "_templ.go"), name == "docs_cites_test.go":
			return nil
		case name == "benchmarks-journal.md":
			// A record of past runs: its links and cites are kept as they were.
			return nil
		case ext == ".go", ext == ".templ", ext == ".js", ext == ".css", ext == ".sql", ext == ".sh", ext == ".md", name == "Makefile":
		default:
			return nil
		}
		rel := strings.TrimPrefix(filepath.ToSlash(path), "../")
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := spaces.ReplaceAllString(commentGap.ReplaceAllString(string(b), " "), " ")
		// A page's own name is relative to docs/ inside docs/.
		resolve := func(page string) string {
			page = strings.TrimPrefix(page, "../")
			if !strings.HasPrefix(page, "docs/") && page != "README.md" && strings.HasPrefix(rel, "docs/") {
				page = "docs/" + page
			}
			return page
		}
		for _, m := range citeQuoted.FindAllStringSubmatch(text, -1) {
			page := resolve(m[1])
			if !strings.HasPrefix(page, "docs/") && page != "README.md" {
				continue // another project's file
			}
			body, ok := pages[page]
			if !ok {
				t.Errorf("%s cites %s, which does not exist", rel, page)
				continue
			}
			if !leads(body, m[2]) && !staleCites[rel+": "+m[1]+", \""+m[2]+"\""] {
				t.Errorf("%s cites %s, %q: the page has no heading, bold or italic lead, list item or table row of that name", rel, page, m[2])
			}
		}
		if ext == ".md" {
			for _, m := range citeLink.FindAllStringSubmatch(string(b), -1) {
				page := resolve(m[1])
				if _, ok := pages[page]; !ok {
					if _, err := os.Stat(filepath.Join(root, page)); err != nil {
						t.Errorf("%s links %s, which does not exist", rel, m[1])
					}
					continue
				}
				if m[2] != "" && !anchors[page][m[2][1:]] {
					t.Errorf("%s links %s%s: %s has no such heading", rel, m[1], m[2], page)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// leads reports whether page has a part that starts with section, in any
// case and across line breaks: a heading, an italic lead, a list item or a
// table row; or a bold lead that holds it.
func leads(page, section string) bool {
	words := strings.Fields(section)
	for i, w := range words {
		words[i] = regexp.QuoteMeta(w)
	}
	re := regexp.MustCompile(`(?im)(?:^#+\s*|\*\*[^*]*?|(?:^|\s)\*|^\s*[-*]\s+|^\|\s*)` + strings.Join(words, `\s+`))
	return re.MatchString(page)
}

func mustGlob(tb testing.TB, pattern string) []string {
	tb.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) == 0 {
		tb.Fatalf("glob %s: %v %v", pattern, m, err)
	}
	return m
}

var (
	testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Z]\w*)\(`)
	testName = regexp.MustCompile(`\b((?:Test|Benchmark|Fuzz)[A-Z]\w*)(\*?)`)
)

// TestDocsNameTestsThatExist: every test, benchmark or fuzz target that a
// docs page or a code comment names as a proof is a function of some
// _test.go file (a name ending in * stands for the tests it begins). A
// test renamed or removed alone leaves a claim with no proof; it fails
// here. benchmarks-journal.md keeps the names of its time.
func TestDocsNameTestsThatExist(t *testing.T) {
	root := ".."
	defined := map[string]bool{}
	cited := map[string]string{} // name (with its *) → a file that names it
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "var" || n == "bin" || n == "testdata" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if name == "benchmarks-journal.md" || !(strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".md")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(name, "_test.go") {
			for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
				defined[m[1]] = true
			}
		}
		rel := strings.TrimPrefix(filepath.ToSlash(path), "../")
		for _, m := range testName.FindAllStringSubmatch(string(b), -1) {
			if _, ok := cited[m[1]+m[2]]; !ok {
				cited[m[1]+m[2]] = rel
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(defined) == 0 || len(cited) == 0 {
		t.Fatalf("%d tests defined, %d named: the scan proves nothing", len(defined), len(cited))
	}
	for c, file := range cited {
		name, glob := strings.CutSuffix(c, "*")
		ok := defined[name]
		for d := range defined {
			ok = ok || glob && strings.HasPrefix(d, name)
		}
		if !ok {
			t.Errorf("%s names %s, which no _test.go file defines", file, c)
		}
	}
}
