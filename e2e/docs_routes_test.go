package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEEndpoints holds the README's list of endpoints ("Endpoints:
// `/` …", under "renderer — one replica") to the renderer's routes
// (web/routes.go): every path the router serves is named there, the
// profiles by their index `/debug/pprof/` (the assets under /static/ are
// docs/operations.md, "Caching"). A route added or renamed in the code
// alone fails here.
func TestREADMEEndpoints(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "web", "routes.go"))
	if err != nil {
		t.Fatal(err)
	}
	routes := regexp.MustCompile(`\.(?:Get|Handle|HandleFunc)\("(/[^"]*)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) < 10 {
		t.Fatalf("found %d routes in web/routes.go: the scan proves nothing", len(routes))
	}
	if !strings.Contains(string(src), "s.profileRoutes()") || !strings.Contains(string(src), "static.Prefix+") {
		t.Fatal("web/routes.go no longer mounts profileRoutes and static.Prefix as this test expects: update it")
	}
	paths := []string{"/debug/pprof/"}
	for _, m := range routes {
		paths = append(paths, m[1])
	}

	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(readme), "\nEndpoints: ")
	if !ok {
		t.Fatal(`README.md has no "Endpoints:" paragraph`)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`(/[^`?\\[]*)").FindAllStringSubmatch(list, -1) {
		named[m[1]] = true
	}
	for _, p := range paths {
		if !named[p] {
			t.Errorf("the renderer serves %s; README's Endpoints paragraph does not name it", p)
		}
	}
	for p := range named {
		found := false
		for _, r := range paths {
			found = found || r == p
		}
		if !found {
			t.Errorf("README's Endpoints paragraph names %s, which web/routes.go does not route", p)
		}
	}
}
