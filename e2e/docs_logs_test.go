package e2e_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestDocsLogLinesExist holds the log lines the README and docs/ quote
// with their level (WARN `store checkpoint failed`, ERROR `start
// failed`) to the code: each is the message, or the start of the message,
// of a log call in a non-test Go file, at that level where the call names
// one. Operators grep their logs for these words; a message reworded, or
// a level moved, in the code alone fails here. benchmarks-journal.md
// keeps the lines of its time.
func TestDocsLogLinesExist(t *testing.T) {
	// A message built around a word ("multi-key "+op+" refused with
	// TRYAGAIN …") matches that word's place with any word.
	joined := regexp.MustCompile(`"\s*\+\s*[A-Za-z_.]+\s*\+\s*"`)
	type call struct {
		line  string
		built bool // the line joins a literal, a word and a literal
	}
	// builtAs reports whether line builds msg with one of its words
	// given by a variable.
	builtAs := func(line, msg string) bool {
		words := strings.Fields(msg)
		for i := 1; i < len(words); i++ {
			pre := `"` + strings.Join(words[:i], " ") + ` "`
			post := `" ` + strings.Join(words[i+1:], " ")
			if strings.Contains(line, pre) && (i == len(words)-1 || strings.Contains(line, post)) {
				return true
			}
		}
		return false
	}
	var calls []call
	goSources(t, "..", func(_ string, src []byte) error {
		for _, l := range strings.Split(string(src), "\n") {
			if strings.Contains(l, `"`) && !strings.HasPrefix(strings.TrimSpace(l), "//") {
				calls = append(calls, call{line: l, built: joined.MatchString(l)})
			}
		}
		return nil
	})
	if len(calls) == 0 {
		t.Fatal("no Go source read: the scan proves nothing")
	}

	quoted := regexp.MustCompile("\\b(ERROR|WARN|INFO|DEBUG)(?: log line)? `([^`]+)`")
	level := regexp.MustCompile(`\.(Error|Warn|Info|Debug)(?:Context)?\(`)
	spaces := regexp.MustCompile(`\s+`)
	n := 0
	for _, pg := range docPages(t) {
		p, b := pg.path, pg.text
		text := spaces.ReplaceAllString(b, " ")
		for _, m := range quoted.FindAllStringSubmatch(text, -1) {
			n++
			msg := strings.TrimSpace(strings.Trim(strings.TrimSpace(m[2]), "…"))
			want := strings.ToUpper(m[1][:1]) + strings.ToLower(m[1][1:])
			found, levelOK := false, false
			for _, c := range calls {
				if !strings.Contains(c.line, msg) && (!c.built || !builtAs(c.line, msg)) {
					continue
				}
				found = true
				l := level.FindStringSubmatch(c.line)
				levelOK = levelOK || l == nil || l[1] == want
			}
			switch {
			case !found:
				t.Errorf("%s quotes %s `%s`, which no Go source logs", strings.TrimPrefix(p, "../"), m[1], m[2])
			case !levelOK:
				t.Errorf("%s quotes %s `%s`; the code logs it at another level", strings.TrimPrefix(p, "../"), m[1], m[2])
			}
		}
	}
	if n == 0 {
		t.Fatal("the docs quote no log line with its level: the scan proves nothing")
	}
}
