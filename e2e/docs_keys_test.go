package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

var (
	docKey      = regexp.MustCompile("`(codemojex:[^`]+)`")
	placeholder = regexp.MustCompile(`[A-Z][A-Z0-9_]*`)
)

// TestDocsKeys holds the Redis keys the docs name to the code that builds
// them: docs/contracts.md's Keys table has a row for every key and
// channel the binaries use and none other, and the README's list of keys
// names each of them too. Placeholders (GAME, GROUP, NAME or CONSUMER,
// REPLICA) stand for any name. A key added or renamed in the code alone
// fails here, and so does one outside codemojex:.
func TestDocsKeys(t *testing.T) {
	const x = "X"
	code := map[string]string{}
	for what, key := range map[string]string{
		"event.StreamKey":           event.StreamKey(x),
		"event.DeadKey":             event.DeadKey(x),
		"feed.DeadPositionsKey":     feed.DeadPositionsKey(event.DeadKey(x)),
		"event.RegistryKey":         event.RegistryKey,
		"event.DoorbellChannel":     event.DoorbellChannel(x),
		"event.LeaseKey":            event.LeaseKey(x, x),
		"event.LeasesKey":           event.LeasesKey(x),
		"event.PresenceKey":         event.PresenceKey(x),
		"event.PresenceReplicasKey": event.PresenceReplicasKey,
		"event.PresenceNameKey":     event.PresenceNameKey(x + "/" + x),
	} {
		code[key] = what
	}
	norm := func(k string) string { return placeholder.ReplaceAllString(k, x) }
	// One key pattern and one channel pattern hold an ACL user to the
	// feed's own (docs/operations.md, "A Redis with ACL users").
	for key, what := range code {
		if !strings.HasPrefix(key, "codemojex:") {
			t.Errorf("%s is %s, outside codemojex:, which the ACL rules do not grant", what, key)
		}
	}

	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	contracts := read("docs/contracts.md")
	_, keys, ok := strings.Cut(contracts, "\n## Keys\n")
	if !ok {
		t.Fatal(`docs/contracts.md has no "## Keys" section`)
	}
	keys, _, _ = strings.Cut(keys, "\n## ")
	tabled := map[string]bool{}
	for _, line := range strings.Split(keys, "\n") {
		if !strings.HasPrefix(line, "| `codemojex:") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range docKey.FindAllStringSubmatch(cell, -1) {
			k := norm(m[1])
			tabled[k] = true
			if _, ok := code[k]; !ok {
				t.Errorf("docs/contracts.md's Keys table has %s, which no key of the code is", m[1])
			}
		}
	}

	readme := read("README.md")
	_, list, ok := strings.Cut(readme, "\nKeys (")
	if !ok {
		t.Fatal(`README.md has no "Keys (…)" paragraph`)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	listed := map[string]bool{}
	for _, m := range docKey.FindAllStringSubmatch(list, -1) {
		k := norm(m[1])
		listed[k] = true
		if _, ok := code[k]; !ok {
			t.Errorf("README.md's keys name %s, which no key of the code is", m[1])
		}
	}

	var missing []string
	for k, what := range code {
		if !tabled[k] {
			missing = append(missing, "docs/contracts.md's Keys table lacks "+k+" ("+what+")")
		}
		if !listed[k] {
			missing = append(missing, "README.md's keys lack "+k+" ("+what+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Error(m)
	}
}
