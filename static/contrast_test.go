package static_test

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// textPairs are the stylesheet's rules that set a text colour, each with
// what its text sits on. The colours are read from app.css itself: a rule's
// color, and its background when it has one (else on, the colour it sits
// on); a translucent background (color-mix with transparent) is laid over
// under. A rule here that app.css no longer has fails the test, so that the
// table follows the stylesheet.
var textPairs = []struct {
	sel   string // the rule's selector, as written in app.css
	on    string // the background when the rule sets none
	under string // what the rule's background is laid over
}{
	{sel: "body"},
	{sel: "a", on: "var(--bg)"},
	{sel: "a", on: "var(--card)"},
	{sel: ".brand em", on: "var(--card)"},
	{sel: ".skip"},
	{sel: "h1 small", on: "var(--bg)"},
	{sel: ".empty", on: "var(--bg)"},
	{sel: ".empty", on: "var(--card)"},
	{sel: ".err", on: "var(--bg)"},
	{sel: ".err", on: "var(--card)"},
	{sel: "thead th", on: "var(--card)"},
	{sel: "td small, tbody th small", on: "var(--card)"},
	{sel: ".status-playing", under: "var(--card)"},
	{sel: ".status-waiting", under: "var(--card)"},
	{sel: ".status-over"},
	{sel: ".watching"},
	{sel: ".conn"},
	{sel: `.conn[data-state="live"]`, under: "var(--bg)"},
	{sel: `.conn[data-state="reconnecting"], .conn[data-state="connecting"]`, under: "var(--bg)"},
	{sel: `.conn[data-state="offline"]`, under: "var(--bg)"},
	{sel: ".filter", on: "var(--bg)"},
	{sel: ".filter select"},
	{sel: ".tz", on: "var(--bg)"},
	{sel: ".pill"},
	{sel: ".timeline time", on: "var(--card)"},
	{sel: ".timeline time", on: "color-mix(in srgb, var(--accent) 6%, var(--card))"}, // a chat line's
	{sel: ".line-unknown", on: "var(--card)"},
	{sel: ".board-sum", on: "var(--card)"},
	{sel: ".board-meta", on: "var(--card)"},
	{sel: ".player .detail", on: "var(--card)"},
	{sel: ".player .pegs", on: "var(--card)"},
	{sel: ".controls button, .controls select"},
	{sel: ".postext", on: "var(--card)"},
	{sel: ".chip", under: "var(--card)"},
	{sel: ".chip.dead", under: "var(--card)"},
}

// The text colours of the pages contrast with what they sit on by at least
// 4.5:1 (WCAG 2.2, 1.4.3, for text of any size), in the light scheme and in
// the dark one. axe-core checks the pages' contrast in the browser, in the
// light scheme only; the pill's white on the dark scheme's accent was 2.8:1.
func TestTextContrast(t *testing.T) {
	css, err := os.ReadFile("app.css")
	if err != nil {
		t.Fatal(err)
	}
	src := string(css)
	schemes := map[string]map[string]string{
		"light": customProperties(t, block(t, src, ":root")),
		"dark":  customProperties(t, block(t, block(t, src, "@media (prefers-color-scheme: dark)"), ":root")),
	}
	for _, scheme := range []string{"light", "dark"} {
		vars := schemes[scheme]
		for _, p := range textPairs {
			rule := block(t, src, p.sel)
			fgExpr := declaration(rule, "color")
			if fgExpr == "" {
				fgExpr = "var(--fg)" // inherited from body
			}
			bgExpr := declaration(rule, "background")
			if bgExpr == "" {
				bgExpr = p.on
			}
			if bgExpr == "" {
				t.Fatalf("%s: no background in app.css and none given", p.sel)
			}
			under := p.under
			if under == "" {
				under = "var(--bg)"
			}
			base, err := resolve(under, vars, rgb{})
			if err != nil {
				t.Fatalf("%s: %v", p.sel, err)
			}
			bg, err := resolve(bgExpr, vars, base)
			if err != nil {
				t.Fatalf("%s: background %q: %v", p.sel, bgExpr, err)
			}
			fg, err := resolve(fgExpr, vars, bg)
			if err != nil {
				t.Fatalf("%s: color %q: %v", p.sel, fgExpr, err)
			}
			if r := contrast(fg, bg); r < 4.5 {
				t.Errorf("%s scheme: %s: %s on %s is %.2f:1, want at least 4.5:1", scheme, p.sel, fgExpr, bgExpr, r)
			}
		}
	}
}

// block returns the body of the first rule (or at-rule) in src whose
// selector is sel, without its braces; nested braces are kept.
func block(t *testing.T, src, sel string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^[ \t]*` + regexp.QuoteMeta(sel) + `[ \t]*\{`)
	loc := re.FindStringIndex(src)
	if loc == nil {
		t.Fatalf("app.css has no rule %q", sel)
	}
	depth := 1
	for i := loc[1]; i < len(src); i++ {
		switch src[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return src[loc[1]:i]
			}
		}
	}
	t.Fatalf("app.css: rule %q not closed", sel)
	return ""
}

var declRE = regexp.MustCompile(`(?:^|[;{\s])([a-z-]+)\s*:\s*([^;]+)`)

// declaration returns the value of the rule's declaration of prop, "" for
// none, without !important.
func declaration(rule, prop string) string {
	v := ""
	for _, m := range declRE.FindAllStringSubmatch(rule, -1) {
		if m[1] == prop {
			v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m[2]), "!important"))
		}
	}
	return v
}

func customProperties(t *testing.T, rule string) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(--[a-z-]+)\s*:\s*([^;]+);`).FindAllStringSubmatch(rule, -1) {
		vars[m[1]] = strings.TrimSpace(m[2])
	}
	if len(vars) == 0 {
		t.Fatal("app.css: a :root without custom properties")
	}
	return vars
}

type rgb struct{ r, g, b float64 } // 0–255, sRGB

var mixRE = regexp.MustCompile(`^color-mix\(in srgb,\s*(.+?)\s+([0-9.]+)%,\s*(.+)\)$`)

// resolve evaluates the colour expressions app.css uses: #hex, var(--x) and
// color-mix(in srgb, A P%, B), B possibly transparent, which is A at P%
// opacity laid over under.
func resolve(expr string, vars map[string]string, under rgb) (rgb, error) {
	expr = strings.TrimSpace(expr)
	switch {
	case strings.HasPrefix(expr, "var("):
		v, ok := vars[strings.TrimSuffix(strings.TrimPrefix(expr, "var("), ")")]
		if !ok {
			return rgb{}, fmt.Errorf("no custom property %s", expr)
		}
		return resolve(v, vars, under)
	case strings.HasPrefix(expr, "#"):
		h := expr[1:]
		if len(h) == 3 {
			h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
		}
		n, err := strconv.ParseUint(h, 16, 32)
		if err != nil || len(h) != 6 {
			return rgb{}, fmt.Errorf("colour %q", expr)
		}
		return rgb{float64(n >> 16), float64(n >> 8 & 0xff), float64(n & 0xff)}, nil
	case mixRE.MatchString(expr):
		m := mixRE.FindStringSubmatch(expr)
		a, err := resolve(m[1], vars, under)
		if err != nil {
			return rgb{}, err
		}
		p, _ := strconv.ParseFloat(m[2], 64)
		p /= 100
		b := under
		if m[3] != "transparent" {
			if b, err = resolve(m[3], vars, under); err != nil {
				return rgb{}, err
			}
		}
		return rgb{a.r*p + b.r*(1-p), a.g*p + b.g*(1-p), a.b*p + b.b*(1-p)}, nil
	}
	return rgb{}, fmt.Errorf("colour expression %q not understood", expr)
}

// luminance is WCAG's relative luminance.
func luminance(c rgb) float64 {
	lin := func(v float64) float64 {
		v /= 255
		if v <= 0.04045 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c.r) + 0.7152*lin(c.g) + 0.0722*lin(c.b)
}

func contrast(a, b rgb) float64 {
	la, lb := luminance(a), luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}
