package e2e_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
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
		goSources(t, filepath.Join("..", dir), func(path string, src []byte) error {
			for _, m := range metricLiteral.FindAllStringSubmatch(string(src), -1) {
				code[m[1]] = path
			}
			return nil
		})
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

// metricWithLabels is a metric mention in the docs with the label names
// in its braces ("codemojex_feed_dead_total{reason=\"conflict\"}").
var metricWithLabels = regexp.MustCompile(`\b(codemojex_(?:feed|store|web)_[a-z0-9_]+)\{([^}]*)\}`)

// TestMetricLabelsDocumented holds the label names in docs/ to the code:
// a metric the docs write with braces (`codemojex_feed_lag{game}`,
// `codemojex_feed_dead_total{reason="conflict"}`) names the label the code
// gives it, and every labeled metric's row in docs/operations.md's
// Metrics table names its label, so that an operator writing a query
// from the table groups by a label that exists. A label renamed, added or
// dropped in the code alone fails here.
func TestMetricLabelsDocumented(t *testing.T) {
	code := codeMetricLabels(t)
	for _, f := range metricDocs {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metricWithLabels.FindAllStringSubmatch(string(b), -1) {
			name := m[1]
			want, ok := code[name]
			if !ok {
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if base, cut := strings.CutSuffix(name, suffix); cut {
						if l, known := code[base]; known {
							name, want, ok = base, l, true
						}
					}
				}
			}
			if !ok {
				continue // TestMetricsDocumented reports names the code does not register
			}
			for _, part := range strings.Split(m[2], ",") {
				label, _, _ := strings.Cut(strings.TrimSpace(part), "=")
				if label == "le" && strings.HasSuffix(m[1], "_bucket") {
					continue
				}
				if label != want {
					t.Errorf("%s writes %s: the code labels %s by %q", f, m[0], name, want)
				}
			}
		}
	}

	b, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "\n## Metrics")
	section, _, _ = strings.Cut(section, "\n## ")
	rowed := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range metricWithLabels.FindAllStringSubmatch(cell, -1) {
			rowed[m[1]] = true
		}
	}
	var bare []string
	for name, label := range code {
		if label != "" && !rowed[name] {
			bare = append(bare, name+"{"+label+"}")
		}
	}
	sort.Strings(bare)
	for _, m := range bare {
		t.Errorf("docs/operations.md's Metrics table names %s without its label: want %s", strings.SplitN(m, "{", 2)[0], m)
	}
}

// codeMetricLabels reads the metric registrations of metricSources and
// returns each metric's label name ("" for none): a promauto vector's
// []string{"label"}, counterset.Labeled's third argument, or that of a
// local wrapper (web's frameCounter) that passes its name to Labeled with
// a literal label.
func codeMetricLabels(t *testing.T) map[string]string {
	t.Helper()
	str := func(e ast.Expr) (string, bool) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(lit.Value)
		return s, err == nil
	}
	callee := func(c *ast.CallExpr) string {
		switch f := c.Fun.(type) {
		case *ast.Ident:
			return f.Name
		case *ast.SelectorExpr:
			return f.Sel.Name
		case *ast.IndexExpr: // counterset.Labeled[T]
			if s, ok := f.X.(*ast.SelectorExpr); ok {
				return s.Sel.Name
			}
		}
		return ""
	}
	var files []*ast.File
	fset := token.NewFileSet()
	for _, dir := range metricSources {
		goSources(t, filepath.Join("..", dir), func(path string, src []byte) error {
			f, err := parser.ParseFile(fset, path, src, 0)
			if err != nil {
				return err
			}
			files = append(files, f)
			return nil
		})
	}
	// Wrappers: func w(name, help string, …) { … Labeled(name, help, "label", …) … }
	wrappers := map[string]string{}
	for _, f := range files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || len(fn.Type.Params.List) == 0 || len(fn.Type.Params.List[0].Names) == 0 {
				continue
			}
			first := fn.Type.Params.List[0].Names[0].Name
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				c, ok := n.(*ast.CallExpr)
				if !ok || callee(c) != "Labeled" || len(c.Args) < 3 {
					return true
				}
				if id, ok := c.Args[0].(*ast.Ident); ok && id.Name == first {
					if l, ok := str(c.Args[2]); ok {
						wrappers[fn.Name.Name] = l
					}
				}
				return true
			})
		}
	}
	labels := map[string]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) == 0 {
				return true
			}
			name, ok := str(c.Args[0])
			if !ok {
				if cl, isLit := c.Args[0].(*ast.CompositeLit); isLit {
					for _, e := range cl.Elts {
						if kv, isKV := e.(*ast.KeyValueExpr); isKV {
							if k, isID := kv.Key.(*ast.Ident); isID && k.Name == "Name" {
								name, ok = str(kv.Value)
							}
						}
					}
				}
			}
			if !ok || !metricMention.MatchString(name) {
				return true
			}
			label := ""
			switch fn := callee(c); {
			case fn == "Labeled" && len(c.Args) >= 3:
				label, _ = str(c.Args[2])
			case wrappers[fn] != "":
				label = wrappers[fn]
			default:
				for _, a := range c.Args[1:] {
					if cl, isLit := a.(*ast.CompositeLit); isLit {
						if _, isArr := cl.Type.(*ast.ArrayType); isArr {
							var ls []string
							for _, e := range cl.Elts {
								if s, isStr := str(e); isStr {
									ls = append(ls, s)
								}
							}
							label = strings.Join(ls, ",")
						}
					}
				}
			}
			labels[name] = label
			return true
		})
	}
	if len(labels) == 0 || len(wrappers) == 0 {
		t.Fatalf("found %d metrics and %d wrappers in the code: the scan proves nothing", len(labels), len(wrappers))
	}
	return labels
}
