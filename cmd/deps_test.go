// Package cmd_test checks what the binaries under cmd/ link.
package cmd_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinariesLinkNoTestCode lists the dependencies of every binary under
// cmd/: none may link package testing or a test kit (internal/testkit),
// which belong to tests only.
func TestBinariesLinkNoTestCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{if eq .Name \"main\"}}{{.ImportPath}}{{end}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	mains := strings.Fields(string(out))
	if len(mains) == 0 {
		t.Fatal("go list found no binaries under cmd/")
	}
	for _, m := range mains {
		t.Run(m[strings.LastIndex(m, "/")+1:], func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", m).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", m, err)
			}
			for _, dep := range strings.Fields(string(out)) {
				if dep == "testing" || strings.HasPrefix(dep, "testing/") || strings.Contains(dep, "/internal/testkit") {
					t.Errorf("%s links %s", m, dep)
				}
			}
		})
	}
}
