// Package acldocs gives the tests the ACL rules of docs/operations.md,
// section "A Redis with ACL users", read from the page itself: a test that
// runs a program as those users then fails when the page drops a grant the
// program needs. The e2e tests run the binaries as them; a package's own
// tests (the feed's) use it for paths the binaries' runs do not walk.
package acldocs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/testkit/redistest"
)

// Section is the section of docs/operations.md that holds the rules.
const Section = "A Redis with ACL users"

// Users are the users the section's rules must name.
var Users = []string{"feed-renderer", "feed-writer", "feedctl"}

// SectionLines returns the lines of docs/operations.md's Section.
func SectionLines(tb testing.TB) []string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "operations.md"))
	if err != nil {
		tb.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## "+Section+"\n")
	if !ok {
		tb.Fatalf("docs/operations.md has no section %q", Section)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	return strings.Split(sec, "\n")
}

// Rules returns the section's ACL SETUSER lines by user name, each as its
// words after the user's name (">PASSWORD" among them).
func Rules(tb testing.TB) map[string][]string {
	tb.Helper()
	rules := map[string][]string{}
	for _, line := range SectionLines(tb) {
		rest, ok := strings.CutPrefix(line, "ACL SETUSER ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		rules[f[0]] = f[1:]
	}
	for _, u := range Users {
		if len(rules[u]) == 0 {
			tb.Fatalf("docs/operations.md, %q, has no ACL SETUSER %s line", Section, u)
		}
	}
	return rules
}

// Password is the password SetUsers gives user.
func Password(user string) string { return "pw-" + user }

// SetUsers creates every user of Rules on each of nodes, with Password.
func SetUsers(tb testing.TB, nodes []*redistest.Server) {
	tb.Helper()
	for user, rule := range Rules(tb) {
		args := []any{"ACL", "SETUSER", user}
		for _, w := range rule {
			if w == ">PASSWORD" {
				w = ">" + Password(user)
			}
			args = append(args, w)
		}
		for _, n := range nodes {
			if err := n.Client(tb).Do(context.Background(), args...).Err(); err != nil {
				tb.Fatalf("ACL SETUSER %s on %s: %v", user, n.Addr, err)
			}
		}
	}
}

// ResetLog empties the ACL LOG of each of nodes.
func ResetLog(tb testing.TB, nodes []*redistest.Server) {
	tb.Helper()
	for _, n := range nodes {
		if err := n.Client(tb).Do(context.Background(), "ACL", "LOG", "RESET").Err(); err != nil {
			tb.Fatalf("ACL LOG RESET on %s: %v", n.Addr, err)
		}
	}
}

// Log returns the entries of the ACL LOG of each of nodes, one string each
// naming its node: none when no command was refused.
func Log(tb testing.TB, nodes []*redistest.Server) []string {
	tb.Helper()
	var out []string
	for _, n := range nodes {
		for _, f := range Entries(tb, n.Client(tb)) {
			out = append(out, fmt.Sprintf("%s: %v %v refused to %v (context %v), count %v",
				n.Addr, f["reason"], f["object"], f["username"], f["context"], f["count"]))
		}
	}
	return out
}

// Entries returns the entries of rdb's ACL LOG, each as its fields by
// name ("reason", "object", "username", "context", "count", …), whether
// the server sent them as a map (RESP3) or a flat list (RESP2).
func Entries(tb testing.TB, rdb redis.UniversalClient) []map[string]any {
	tb.Helper()
	v, err := rdb.Do(context.Background(), "ACL", "LOG").Slice()
	if err != nil {
		tb.Fatalf("ACL LOG: %v", err)
	}
	out := make([]map[string]any, 0, len(v))
	for _, e := range v {
		f := map[string]any{}
		switch e := e.(type) {
		case []any:
			for i := 0; i+1 < len(e); i += 2 {
				f[fmt.Sprint(e[i])] = e[i+1]
			}
		case map[any]any:
			for k, x := range e {
				f[fmt.Sprint(k)] = x
			}
		default:
			f["entry"] = e
		}
		out = append(out, f)
	}
	return out
}
