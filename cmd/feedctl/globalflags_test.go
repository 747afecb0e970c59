package main

import (
	"context"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestGlobalFlagsDocumented holds the README's sentence on feedctl's
// global flags ("Global flags: `-redis` (`REDIS_URL`), `-group`
// (`FEED_GROUP`, default `feed`), …") to parseGlobal: the same flags as the
// usage line, each taking the environment variable the README names, with
// the default it gives; and docs/contracts.md's list of them. The README's
// flag tables test (e2e) reads renderer and gamesim only: the README gives
// feedctl's global flags in this sentence, not in a table (feedctl's -h
// lists them since 6 Dec 2026, TestUsageListsGlobalFlags).
func TestGlobalFlagsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(readme)), " ")
	i := strings.Index(text, "Global flags: ")
	if i < 0 {
		t.Fatal("README has no \"Global flags:\" sentence for feedctl")
	}
	sentence, _, _ := strings.Cut(text[i:], ". ")
	type doc struct{ env, def string }
	docs := map[string]doc{}
	var names []string
	for _, m := range regexp.MustCompile("`-([a-z-]+)` \\(`([A-Z_]+)`(?:, default `([^`]+)`)?").FindAllStringSubmatch(sentence, -1) {
		docs[m[1]] = doc{env: m[2], def: m[3]}
		names = append(names, m[1])
	}
	if len(docs) == 0 {
		t.Fatalf("README's %q names no flag", sentence)
	}

	var usageNames []string
	first, _, _ := strings.Cut(usage, "\n")
	for _, m := range regexp.MustCompile(`\[-([a-z-]+) [A-Z]+\]`).FindAllStringSubmatch(first, -1) {
		usageNames = append(usageNames, m[1])
	}
	if !reflect.DeepEqual(names, usageNames) {
		t.Errorf("global flags: README lists %v, feedctl's usage %v", names, usageNames)
	}

	contracts, err := os.ReadFile("../../docs/contracts.md")
	if err != nil {
		t.Fatal(err)
	}
	var contractNames []string
	if m := regexp.MustCompile("global flags \\(((?:`-[a-z-]+`(?:, )?)+)\\)").FindStringSubmatch(strings.Join(strings.Fields(string(contracts)), " ")); m != nil {
		for _, n := range regexp.MustCompile("`-([a-z-]+)`").FindAllStringSubmatch(m[1], -1) {
			contractNames = append(contractNames, n[1])
		}
	}
	if !reflect.DeepEqual(names, contractNames) {
		t.Errorf("global flags: README lists %v, docs/contracts.md %v", names, contractNames)
	}

	value := func(g *global, name string) (string, bool) {
		switch name {
		case "redis":
			return g.redisURL, true
		case "group":
			return g.group, true
		case "future-bound":
			return g.futureBound.String(), true
		case "timeout":
			return g.timeout.String(), true
		}
		return "", false
	}
	same := func(doc, got string) bool {
		if a, err := time.ParseDuration(doc); err == nil {
			b, err := time.ParseDuration(got)
			return err == nil && a == b
		}
		return doc == got
	}
	envValue := map[string]string{"redis": "redis://192.0.2.1:7000/0", "group": "host-b", "future-bound": "3m0s", "timeout": "25s"}
	for name, d := range docs {
		for _, other := range docs {
			t.Setenv(other.env, "") // flagenv takes an empty variable as unset
		}
		// help is no command: parseGlobal opens no Redis for it.
		g, _, err := parseGlobal(context.Background(), []string{"help"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := value(g, name)
		if !ok {
			t.Errorf("README lists global flag -%s; this test does not know where parseGlobal keeps it", name)
			continue
		}
		if d.def != "" && !same(d.def, got) {
			t.Errorf("-%s: README says default %q, feedctl's is %q", name, d.def, got)
		}
		t.Setenv(d.env, envValue[name])
		if g, _, err = parseGlobal(context.Background(), []string{"help"}, io.Discard); err != nil {
			t.Fatalf("$%s=%s: %v", d.env, envValue[name], err)
		}
		if got, _ := value(g, name); !same(envValue[name], got) {
			t.Errorf("-%s: README says $%s sets it; with $%s=%s it is %q", name, d.env, d.env, envValue[name], got)
		}
	}
}
