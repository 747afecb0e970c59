package web

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/codemojex/feed/static"
)

// TestRoutesDocumented holds the server's routes to the endpoints README.md
// and docs/ name: every route is named in them ({game} as {game} or {GAME};
// the pprof handlers under /debug/pprof/, the assets as static.Prefix), and
// every endpoint the docs name is a route. An endpoint added, moved or
// dropped on one side alone fails here.
func TestRoutesDocumented(t *testing.T) {
	var docs strings.Builder
	for _, f := range []string{"../README.md", "../docs/contracts.md", "../docs/operations.md", "../docs/live-page.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	text := strings.ReplaceAll(docs.String(), "{GAME}", "{game}")

	routes := map[string]bool{}
	walk := func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		switch {
		case strings.HasPrefix(route, "/debug/pprof/"):
			route = "/debug/pprof/"
		case strings.HasPrefix(route, static.Prefix):
			route = static.Prefix
		}
		routes[route] = true
		return nil
	}
	if err := chi.Walk((&Server{}).routes().(chi.Routes), walk); err != nil {
		t.Fatal(err)
	}
	if len(routes) == 0 {
		t.Fatal("no routes walked")
	}
	for r := range routes {
		if r == static.Prefix {
			continue // assets: /static/NAME.HASH.EXT in the docs
		}
		if !strings.Contains(text, "`"+r+"`") && !strings.Contains(text, "`"+r+"?") && !strings.Contains(text, "`"+r+" ") {
			t.Errorf("route %s is named in none of README.md, docs/contracts.md, docs/operations.md, docs/live-page.md", r)
		}
	}
	// The endpoints the docs name in code spans, query and all.
	for _, m := range regexp.MustCompile("`((?:/games/\\{game\\}|/fragments|/api|/status|/metrics|/healthz|/readyz|/debug)[^`?\\s]*)").FindAllStringSubmatch(text, -1) {
		if !routes[m[1]] {
			t.Errorf("the docs name endpoint %s, which the server does not route", m[1])
		}
	}
}
