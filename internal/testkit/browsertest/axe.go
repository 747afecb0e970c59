package browsertest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// axeSource is axe-core (MPL-2.0, see testdata/axe), injected into pages to
// check their accessibility.
//
//go:embed testdata/axe/axe.min.js
var axeSource string

// AxeViolation is one rule an axe-core run found broken.
type AxeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"` // minor, moderate, serious or critical
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

func (v AxeViolation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s", v.ID, v.Impact, v.Help)
	for i, n := range v.Nodes {
		if i == 3 {
			fmt.Fprintf(&b, "\n    … %d more", len(v.Nodes)-i)
			break
		}
		fmt.Fprintf(&b, "\n    %v %.160s", n.Target, n.HTML)
	}
	return b.String()
}

// Axe runs axe-core (WCAG 2.x A and AA rules, and best practices) on the
// page open in ctx and returns its violations. The page's CSP does not
// apply: the script is evaluated through the DevTools protocol.
func Axe(tb testing.TB, ctx context.Context) []AxeViolation {
	tb.Helper()
	const run = `(async () => {
		const r = await axe.run(document, {resultTypes: ['violations']});
		return JSON.stringify(r.violations);
	})()`
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](axeSource)); err != nil {
		tb.Fatalf("browsertest: inject axe-core: %v", err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](run, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.Fatalf("browsertest: run axe-core: %v", err)
	}
	var vs []AxeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		tb.Fatalf("browsertest: axe-core result: %v", err)
	}
	return vs
}
