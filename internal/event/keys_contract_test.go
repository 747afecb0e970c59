package event_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/codemojex/feed/internal/event"
)

// placeholder is a key's variable part as the docs spell it (GAME, GROUP,
// NAME, CONSUMER, REPLICA, GROUP/CONSUMER): keys compare with each one
// read as the same.
var placeholder = regexp.MustCompile(`[A-Z][A-Z0-9_]*(/[A-Z][A-Z0-9_]*)*`)

func keyShape(k string) string { return placeholder.ReplaceAllString(k, "X") }

// TestKeysAsContracted holds docs/contracts.md's table of Redis keys to the
// keys the code builds (this package; feed's dead positions set is the dead
// key's name + ":pos"), both ways, and every key that README.md and the other
// pages of docs/ name to those keys. A key added or renamed on one side
// alone fails here.
func TestKeysAsContracted(t *testing.T) {
	code := map[string]string{
		keyShape(event.StreamKey("GAME")):                 "StreamKey",
		keyShape(event.DeadKey("GAME")):                   "DeadKey",
		keyShape(event.DeadKey("GAME") + ":pos"):          "the dead positions set (feed)",
		keyShape(event.RegistryKey):                       "RegistryKey",
		keyShape(event.DoorbellChannel("GROUP")):          "DoorbellChannel",
		keyShape(event.LeaseKey("GROUP", "NAME")):         "LeaseKey",
		keyShape(event.LeasesKey("GROUP")):                "LeasesKey",
		keyShape(event.PresenceKey("REPLICA")):            "PresenceKey",
		keyShape(event.PresenceReplicasKey):               "PresenceReplicasKey",
		keyShape(event.PresenceNameKey("GROUP/CONSUMER")): "PresenceNameKey",
	}

	contracts, err := os.ReadFile(filepath.Join("..", "..", "docs", "contracts.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(codemojex:[^`]+)` \\|")
	table := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(contracts), -1) {
		table[keyShape(m[1])] = m[1]
	}
	if len(table) == 0 {
		t.Fatal("docs/contracts.md has no table of keys")
	}
	for k, fn := range code {
		if _, ok := table[k]; !ok {
			t.Errorf("%s builds %s; docs/contracts.md's table of keys has no such row", fn, k)
		}
	}
	for k, doc := range table {
		if _, ok := code[k]; !ok {
			t.Errorf("docs/contracts.md's table lists %s, which the code does not build", doc)
		}
	}

	// Every key the other pages name. operations.md's codemojex:games:{N}
	// is a sharding it describes as not done.
	mention := regexp.MustCompile("codemojex:[^\\s`|),;]+")
	for _, f := range []string{"README.md", "docs/contracts.md", "docs/operations.md", "docs/reader-law.md", "docs/store.md", "docs/live-page.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mention.FindAllString(string(b), -1) {
			m = strings.TrimRight(m, ".")
			if m == "codemojex:games:{N}" {
				continue
			}
			if strings.Contains(m, "*") {
				// A pattern (an ACL rule's ~codemojex:{*}:events): it
				// must match a key the code builds.
				glob := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(m), `\*`, ".*") + "$")
				if !slices.ContainsFunc(slices.Collect(maps.Keys(code)), glob.MatchString) {
					t.Errorf("%s names pattern %s, which matches no key the code builds", f, m)
				}
				continue
			}
			if _, ok := code[keyShape(m)]; !ok {
				t.Errorf("%s names key %s, which the code does not build", f, m)
			}
		}
	}
}
