package e2e_test

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/proctest"
)

// TestREADMEFlagTables holds the README's flag tables to the binaries: the
// same flags, each with the environment variable its -h names, and a
// default the binary agrees with wherever the README gives a literal one.
// Operators configure by those tables (docs/contracts.md, "Binaries and
// flags"), so a flag added, renamed or re-defaulted in the code alone
// fails here.
func TestREADMEFlagTables(t *testing.T) {
	bin := proctest.Binaries(t)
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cmd, section string }{
		{"renderer", "### renderer"},
		{"gamesim", "### gamesim"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			doc := readmeFlags(t, string(readme), tc.section)
			got := binaryFlags(t, filepath.Join(bin, tc.cmd))
			for name, d := range doc {
				g, ok := got[name]
				if !ok {
					t.Errorf("README lists -%s; %s -h does not", name, tc.cmd)
					continue
				}
				if d.env != g.env {
					t.Errorf("-%s: README says env %s, %s -h says %s", name, d.env, tc.cmd, g.env)
				}
				if d.def != "" && !sameDefault(d.def, g.def) {
					t.Errorf("-%s: README says default %q, %s -h says %q", name, d.def, tc.cmd, g.def)
				}
			}
			for name := range got {
				if _, ok := doc[name]; !ok {
					t.Errorf("%s -h has -%s; README's table does not", tc.cmd, name)
				}
			}
		})
	}
}

type flagDoc struct{ env, def string }

var readmeRow = regexp.MustCompile("^\\| `-([a-z0-9-]+)` \\| `([A-Z0-9_]+)` \\| ([^|]*) \\|")

// readmeFlags reads the flag table under the README heading that starts
// with section. def is set only for a default cell that is one literal.
func readmeFlags(t *testing.T, readme, section string) map[string]flagDoc {
	t.Helper()
	i := strings.Index(readme, "\n"+section)
	if i < 0 {
		t.Fatalf("README has no %q section", section)
	}
	rest := readme[i+1:]
	if j := strings.Index(rest[1:], "\n### "); j >= 0 {
		rest = rest[:j+1]
	}
	flags := map[string]flagDoc{}
	for _, line := range strings.Split(rest, "\n") {
		m := readmeRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		d := flagDoc{env: m[2]}
		if cell := strings.TrimSpace(m[3]); strings.Count(cell, "`") == 2 && strings.HasPrefix(cell, "`") && strings.HasSuffix(cell, "`") {
			d.def = strings.Trim(cell, "`")
		}
		flags[m[1]] = d
	}
	if len(flags) == 0 {
		t.Fatalf("README's %q section has no flag table", section)
	}
	return flags
}

var (
	usageFlag = regexp.MustCompile(`^  -([a-z0-9-]+)`)
	usageEnv  = regexp.MustCompile(`\(env ([A-Z0-9_]+)\)`)
	usageDef  = regexp.MustCompile(`\(default (.*)\)$`)
)

// binaryFlags runs bin [sub…] -h in an empty environment (flagenv takes defaults
// from the environment) and reads flag's usage listing.
func binaryFlags(t *testing.T, bin string, sub ...string) map[string]flagDoc {
	t.Helper()
	cmd := exec.Command(bin, append(sub, "-h")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s -h: %v", bin, err)
	}
	flags := map[string]flagDoc{}
	var name string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		if m := usageFlag.FindStringSubmatch(line); m != nil {
			name = m[1]
			flags[name] = flagDoc{}
			continue
		}
		if name == "" {
			continue
		}
		d := flags[name]
		if m := usageEnv.FindStringSubmatch(line); m != nil {
			d.env = m[1]
		}
		if m := usageDef.FindStringSubmatch(line); m != nil {
			d.def = strings.Trim(m[1], `"`)
		}
		flags[name] = d
	}
	if len(flags) == 0 {
		t.Fatalf("%s -h listed no flags:\n%s", bin, out)
	}
	return flags
}

// sameDefault compares a README default with flag's rendering of it:
// durations by value (5m is 5m0s), a zero value (which flag does not
// print) as empty.
func sameDefault(doc, bin string) bool {
	if doc == bin {
		return true
	}
	if a, err := time.ParseDuration(doc); err == nil {
		b, err := time.ParseDuration(bin)
		if bin == "" {
			b, err = 0, nil
		}
		return err == nil && a == b
	}
	return bin == "" && (doc == "0" || doc == "false")
}

// TestOperationsLimitsTable holds the defaults in docs/operations.md's
// table of limits ("Running it in public") to the renderer's -h: a row
// whose first cell names flags gives their defaults, in order, in its
// second ("1000, 1 MiB"; "30 s").
func TestOperationsLimitsTable(t *testing.T) {
	bin := proctest.Binaries(t)
	ops, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := binaryFlags(t, filepath.Join(bin, "renderer"))
	row := regexp.MustCompile("^\\| ((?:`-[a-z0-9-]+`(?:, )?)+)(?: \\([^|]*\\))? \\| ([^|]+) \\|")
	flagName := regexp.MustCompile("`-([a-z0-9-]+)`")
	rows := 0
	for _, line := range strings.Split(string(ops), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		names := flagName.FindAllStringSubmatch(m[1], -1)
		defs := strings.Split(m[2], ",")
		if len(names) != len(defs) {
			t.Errorf("docs/operations.md: %d flags and %d defaults in %q", len(names), len(defs), line)
			continue
		}
		rows++
		for i, n := range names {
			g, ok := got[n[1]]
			if !ok {
				t.Errorf("docs/operations.md's limits table lists -%s; renderer -h does not", n[1])
				continue
			}
			d := docDefault(strings.TrimSpace(defs[i]))
			if !sameDefault(d, g.def) {
				t.Errorf("-%s: docs/operations.md says default %q, renderer -h says %q", n[1], d, g.def)
			}
		}
	}
	if rows == 0 {
		t.Fatal("docs/operations.md has no table of limits with flags")
	}
}

// docDefault turns a default as the docs write it for people ("30 s",
// "1 MiB") into flag's form ("30s", "1048576").
func docDefault(s string) string {
	num, unit, _ := strings.Cut(s, " ")
	switch unit {
	case "KiB", "MiB":
		n, err := strconv.Atoi(num)
		if err != nil {
			return s
		}
		if unit == "KiB" {
			return strconv.Itoa(n << 10)
		}
		return strconv.Itoa(n << 20)
	case "ms", "s", "min", "h":
		if unit == "min" {
			unit = "m"
		}
		return num + unit
	}
	return s
}

// TestREADMEDurationBounds holds the bounds the README's renderer table
// gives its duration flags ("at least `10ms`", "at most `1s`") to the
// renderer: a value just past a bound is refused (exit status 2, the flag
// named), the bound itself is taken; and a duration flag the renderer
// refuses at 1ns or at 1000h has its bound in its row. A bound added or
// moved in the code alone fails here. Every run names a -redis that is no
// URL, checked after the durations: a value taken is refused for -redis
// instead, and nothing is opened.
func TestREADMEDurationBounds(t *testing.T) {
	bin := filepath.Join(proctest.Binaries(t), "renderer")
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(readme), "\n### renderer")
	if i < 0 {
		t.Fatal("README has no renderer section")
	}
	section := string(readme)[i+1:]
	if j := strings.Index(section[1:], "\n### "); j >= 0 {
		section = section[:j+1]
	}
	rows := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		if m := readmeRow.FindStringSubmatch(line); m != nil {
			rows[m[1]] = line
		}
	}
	// refused runs renderer with -name value and reports whether it was
	// refused for that flag rather than for the -redis after it.
	// A bound relative to another flag (-presence-ttl at least twice
	// -presence-every, its row says) is taken out of the way: the partner
	// is given a value that leaves only the flag's own bound.
	partner := map[string][]string{
		"presence-ttl":   {"-presence-every", "1ns"},
		"presence-every": {"-presence-ttl", "10000h"},
	}
	refused := func(t *testing.T, name string, v time.Duration) bool {
		t.Helper()
		args := append([]string{"-" + name, v.String()}, partner[name]...)
		cmd := exec.Command(bin, append(args, "-redis", "127.0.0.1:1", "-http", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "feed.db"))...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("renderer -%s %v: %v, want exit status 2 (for the flag or for -redis):\n%s", name, v, err, out)
		}
		if strings.Contains(string(out), "-redis:") {
			return false
		}
		if !strings.Contains(string(out), "-"+name) {
			t.Fatalf("renderer -%s %v refused without naming the flag:\n%s", name, v, out)
		}
		return true
	}
	atLeast := regexp.MustCompile("at least `([0-9a-z]+)`")
	atMost := regexp.MustCompile("at most `([0-9a-z]+)`")
	durations := 0
	for name, g := range binaryFlags(t, bin) {
		if _, err := time.ParseDuration(g.def); err != nil {
			continue
		}
		durations++
		t.Run(name, func(t *testing.T) {
			row := rows[name]
			lo, hi := time.Duration(0), time.Duration(0)
			if m := atLeast.FindStringSubmatch(row); m != nil {
				if lo, err = time.ParseDuration(m[1]); err != nil {
					t.Fatalf("README's -%s: at least %q: %v", name, m[1], err)
				}
			}
			if m := atMost.FindStringSubmatch(row); m != nil {
				if hi, err = time.ParseDuration(m[1]); err != nil {
					t.Fatalf("README's -%s: at most %q: %v", name, m[1], err)
				}
			}
			if lo > 0 {
				if !refused(t, name, lo-time.Nanosecond) {
					t.Errorf("README says -%s is at least %v; renderer takes %v", name, lo, lo-time.Nanosecond)
				}
				if refused(t, name, lo) {
					t.Errorf("README says -%s is at least %v; renderer refuses %v", name, lo, lo)
				}
			} else if refused(t, name, time.Nanosecond) {
				t.Errorf("renderer refuses -%s 1ns; README's row gives no floor (\"at least `D`\")", name)
			}
			if hi > 0 {
				if !refused(t, name, hi+time.Nanosecond) {
					t.Errorf("README says -%s is at most %v; renderer takes %v", name, hi, hi+time.Nanosecond)
				}
				if refused(t, name, hi) {
					t.Errorf("README says -%s is at most %v; renderer refuses %v", name, hi, hi)
				}
			} else if refused(t, name, 1000*time.Hour) {
				t.Errorf("renderer refuses -%s 1000h; README's row gives no ceiling (\"at most `D`\")", name)
			}
		})
	}
	if durations == 0 {
		t.Fatal("renderer -h listed no duration flag: the test proves nothing")
	}
}

// TestDocsNameFlagsThatExist: every flag the README and docs/ write in
// code (`-linger`, `-chaos.events 2500`) is one of some binary's
// (renderer, gamesim, feedctl and its commands, feedbench), a test flag
// of this module, or one of go's own; a flag renamed or removed in the code
// alone leaves the docs telling operators to pass one that is refused. The
// store's companion files (`-wal`, `-shm`) are no flags.
// benchmarks-journal.md keeps the names of its time.
func TestDocsNameFlagsThatExist(t *testing.T) {
	bins := proctest.Binaries(t)
	known := map[string]bool{
		// go test's and go build's own, as the docs show commands.
		"bench": true, "fuzz": true, "short": true, "race": true, "run": true, "count": true, "timeout": true, "tags": true, "v": true, "cpu": true, "benchtime": true,
		// The store's companion files, written `-wal` and `-shm`.
		"wal": true, "shm": true,
		// Every command's help.
		"h": true,
	}
	runs := [][]string{{"renderer"}, {"gamesim"}, {"feedbench"}, {"feedbench", "broadcaster"}, {"feedbench", "clients"}}
	for _, c := range [][]string{{"status"}, {"dead", "list"}, {"dead", "requeue"}, {"dead", "drop"}, {"replay"}, {"rebuild"}, {"prune"}} {
		runs = append(runs, append([]string{"feedctl"}, c...))
	}
	for _, r := range runs {
		cmd := exec.Command(filepath.Join(bins, r[0]), append(r[1:], "-h")...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, _ := cmd.CombinedOutput()
		n := 0
		for _, line := range strings.Split(string(out), "\n") {
			if m := usageFlag.FindStringSubmatch(line); m != nil {
				known[m[1]] = true
				n++
			}
		}
		if n == 0 {
			t.Fatalf("%v -h listed no flags:\n%s", r, out)
		}
	}
	// feedctl's global flags are in its usage line.
	out, _ := exec.Command(filepath.Join(bins, "feedctl"), "-h").CombinedOutput()
	first, _, _ := strings.Cut(string(out), "\n")
	globals := regexp.MustCompile(`\[-([a-z-]+) [A-Z]+\]`).FindAllStringSubmatch(first, -1)
	if len(globals) == 0 {
		t.Fatalf("feedctl -h names no global flag:\n%s", out)
	}
	for _, m := range globals {
		known[m[1]] = true
	}
	// The test flags of this module's packages (go test ./e2e -chaos.events N).
	testFlag := regexp.MustCompile(`flag\.(?:String|Int|Bool|Duration|Float64)\("([a-z.]+)"`)
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "var" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range testFlag.FindAllStringSubmatch(string(b), -1) {
				known[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A code span that is a flag (`-linger 3ms`), or a command line of
	// one of the binaries (`feedctl prune -older-than 720h -db F`, `bin/feedbench
	// -only idle`, `FEED_WS_ENGINE=nbio make chaos` is none): other tools'
	// flags (`truncate -s`, `curl -o`) are theirs.
	span := regexp.MustCompile("`([^`\n]+)`")
	ours := regexp.MustCompile(`^(?:[A-Z_]+=\S* )*(?:bin/)?(?:renderer|gamesim|feedctl|feedbench|go test)\b`)
	flagTok := regexp.MustCompile(`(?:^|\s)-([a-z][a-z0-9.-]*)`)
	for _, pg := range docPages(t) {
		p, b := pg.path, pg.text
		seen := map[string]bool{}
		for _, sp := range span.FindAllStringSubmatch(b, -1) {
			code := sp[1]
			toks := flagTok.FindAllStringSubmatch(code, -1)
			switch {
			case strings.HasPrefix(code, "-"):
				toks = toks[:min(len(toks), 1)] // `-` alone, `-1`: no flag
			case !ours.MatchString(code):
				continue
			}
			for _, m := range toks {
				name := strings.TrimRight(m[1], ".-")
				if known[name] || seen[name] {
					continue
				}
				seen[name] = true
				t.Errorf("%s names -%s, which no binary, test or go command takes", strings.TrimPrefix(p, "../"), name)
			}
		}
	}
}

// TestDocsProseDefaults holds the defaults the docs give in passing,
// "`-claim-every` (default 5 s)", "`-active-window` (10 s)", "`-recent`
// (200)", to the binaries' -h (renderer, gamesim, feedctl and its
// commands): the README's tables are held by TestREADMEFlagTables, these
// sentences by nothing, and a default changed in the code alone left them
// behind.
func TestDocsProseDefaults(t *testing.T) {
	bins := proctest.Binaries(t)
	defs := map[string][]string{} // flag → its defaults, one per binary that has it
	for _, r := range [][]string{{"renderer"}, {"gamesim"}, {"feedctl"}, {"feedctl", "status"}, {"feedctl", "dead", "list"}, {"feedctl", "prune"}} {
		for name, f := range binaryFlags(t, filepath.Join(bins, r[0]), r[1:]...) {
			defs[name] = append(defs[name], f.def)
		}
	}
	prose := regexp.MustCompile("`-([a-z][a-z0-9-]*)`,? \\((?:default\\s+)?([0-9][0-9.,]*(?:\\s?(?:ms|s|min|h|KiB|MiB))?)[,;)]")
	n := 0
	for _, p := range mustGlob(t, filepath.Join("..", "docs", "*.md")) {
		if b := filepath.Base(p); b == "benchmarks-journal.md" || b == "benchmarks.md" {
			continue // records of runs, with the flags they were run with
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(b)), " ")
		for _, m := range prose.FindAllStringSubmatch(text, -1) {
			got, ok := defs[m[1]]
			if !ok {
				continue // TestDocsNameFlagsThatExist reports unknown flags
			}
			n++
			doc := docDefault(strings.ReplaceAll(m[2], ",", ""))
			match := false
			for _, g := range got {
				match = match || sameDefault(doc, g)
			}
			if !match {
				t.Errorf("%s gives -%s a default of %s; the binaries' -h say %q", strings.TrimPrefix(p, "../"), m[1], m[2], got)
			}
		}
	}
	if n == 0 {
		t.Fatal("the docs give no default in passing: the scan proves nothing")
	}
}
