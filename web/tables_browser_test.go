package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// tableProblems lists what a screen reader's table navigation lacks in the
// page's tables: a caption (the table's name), and a scope on each header
// cell (the cells it heads).
const tableProblems = `Array.from(document.querySelectorAll('table')).flatMap((t, i) => {
	const out = [];
	if (!t.caption || !t.caption.textContent.trim()) out.push('table ' + i + ' (' + t.className + '): no caption');
	for (const th of t.querySelectorAll('th')) {
		if (!/^(col|row|colgroup|rowgroup)$/.test(th.getAttribute('scope') || '')) out.push('table ' + i + ' (' + t.className + '): th ' + JSON.stringify(th.textContent) + ' without scope');
	}
	if (!t.tHead || !t.tHead.querySelector('th')) out.push('table ' + i + ' (' + t.className + '): no header row');
	return out;
})`

// The index's games table and the status page's streams table (as served
// and as swapped in by the page's refresh) have a caption, a header row
// and a scope on every header cell.
func TestBrowserTablesHaveHeaders(t *testing.T) {
	e := MustOpenEnv(t, nil)
	seedLongGame(t, e)
	b := mustOpenBrowser(t)
	for _, p := range []struct{ what, path, ready string }{
		{"index", "/", `document.querySelector('#index').dataset.state === 'live'`},
		{"status", "/status", `document.querySelector('#status').dataset.state === 'live'`},
	} {
		b.do(chromedp.Navigate(e.url(p.path)))
		b.until(p.what, p.ready)
		if got := b.eval(tableProblems); len(got) > 0 {
			t.Errorf("%s:\n%s", p.what, strings.Join(got, "\n"))
		}
		if n := b.num(`document.querySelectorAll('table').length`); n != 1 {
			t.Errorf("%s: %v tables, want 1", p.what, n)
		}
	}
	// The status page's refresh swaps in the fragment's table.
	b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('table').dataset.old = '1'`))
	b.until("the status table refreshed", `!document.querySelector('table').dataset.old`)
	if got := b.eval(tableProblems); len(got) > 0 {
		t.Errorf("status, refreshed:\n%s", strings.Join(got, "\n"))
	}
	b.noProblems()
}
