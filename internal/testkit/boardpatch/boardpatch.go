// Package boardpatch applies a board frame's panel to the panel a page
// shows, as the page script does (docs/contracts.md): each stub
// <li data-keep data-player="NAME"></li> becomes the page's row of that
// player. Tests use it to hold what a socket's frames add up to against a
// fresh render of the store.
package boardpatch

import (
	"fmt"
	"strings"
)

const (
	stubOpen  = `<li data-keep data-player="`
	stubClose = `"></li>`
	attr      = ` data-player="`
)

// Apply returns patch with every stub replaced by shown's row of the same
// player, or an error naming the first stub that shown has no row for.
// Attribute values are compared as rendered (escaped alike on both sides).
func Apply(shown, patch string) (string, error) {
	var b strings.Builder
	rest := patch
	for {
		i := strings.Index(rest, stubOpen)
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		b.WriteString(rest[:i])
		rest = rest[i+len(stubOpen):]
		j := strings.Index(rest, stubClose)
		if j < 0 {
			return "", fmt.Errorf("boardpatch: unterminated stub %q", rest)
		}
		name := rest[:j]
		rest = rest[j+len(stubClose):]
		row, ok := rowOf(shown, name)
		if !ok {
			return "", fmt.Errorf("boardpatch: stub for player %q: no such row in the panel shown", name)
		}
		b.WriteString(row)
	}
}

// rowOf finds the <li …> … </li> of the player named (escaped) name in a
// full panel. Rows hold no nested <li>.
func rowOf(panel, name string) (string, bool) {
	key := attr + name + `"`
	for off := 0; ; {
		k := strings.Index(panel[off:], key)
		if k < 0 {
			return "", false
		}
		k += off
		start := strings.LastIndex(panel[:k], "<li")
		end := strings.Index(panel[k:], "</li>")
		if start < 0 || end < 0 {
			return "", false
		}
		if row := panel[start : k+end+len("</li>")]; !strings.HasPrefix(row, stubOpen) {
			return row, true
		}
		off = k + len(key)
	}
}
