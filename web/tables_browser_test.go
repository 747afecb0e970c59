package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/web"
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

// rowHeaderProblems lists, for each data row of #BODY (not the "no games"
// or "more games" message rows), a first cell that is no <th scope="row">
// or another cell that is no <td>, and a row header that looks unlike the
// row's other cells did: the same font, case, colour, padding and borders
// as a text cell beside it (td:not(.num)), aligned left.
const rowHeaderProblems = `((body) => Array.from(document.querySelectorAll(body + ' > tr:not(.empty):not(.more)')).flatMap((tr, i) => {
	const out = [], [first, ...rest] = tr.cells;
	if (first.tagName !== 'TH' || first.getAttribute('scope') !== 'row') out.push('row ' + i + ': first cell ' + first.outerHTML.slice(0, 40));
	for (const c of rest) if (c.tagName !== 'TD') out.push('row ' + i + ': cell ' + c.outerHTML.slice(0, 40));
	const td = rest.find(c => !c.classList.contains('num'));
	const a = getComputedStyle(first), b = getComputedStyle(td);
	for (const p of ['font-size', 'font-weight', 'font-style', 'text-transform', 'letter-spacing', 'color', 'background-color', 'vertical-align',
		'padding-top', 'padding-right', 'padding-bottom', 'padding-left', 'border-bottom-width', 'border-bottom-style', 'border-bottom-color']) {
		if (a.getPropertyValue(p) !== b.getPropertyValue(p)) out.push('row ' + i + ': row header ' + p + ' ' + a.getPropertyValue(p) + ', its cells ' + b.getPropertyValue(p));
	}
	if (a.textAlign !== 'left') out.push('row ' + i + ': row header aligned ' + a.textAlign);
	if (tr.classList.contains('bad') && a.borderLeftWidth !== '3px') out.push('row ' + i + ': a bad row without its 3px mark, ' + a.borderLeftWidth);
	return out;
}))`

// axRole returns the role Chromium's accessibility tree gives the element
// js evaluates to.
func (b *browser) axRole(js string) string {
	b.tb.Helper()
	obj, node := b.element(js)
	tree, err := chromedp.Call(b.ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{ObjectID: obj})
	if err != nil {
		b.tb.Fatalf("%s: %v", js, err)
	}
	for _, n := range tree.Nodes {
		if n.BackendDOMNodeID == node && n.Role != nil {
			return strings.Trim(string(n.Role.Value), `"`)
		}
	}
	return ""
}

// Each row of the index's games table and of the status page's streams
// table (as served and as swapped in by the refresh) is headed by its
// first cell, the game, a <th scope="row"> that Chromium names a row
// header, so that a screen reader moving down a column says which game
// each cell is of; it looks as the <td> it was, on a phone too (its
// <small> hidden). Every cell was a <td>: the game was said with the
// column's header alone.
func TestBrowserTablesHaveRowHeaders(t *testing.T) {
	st := feed.Status{Group: "feed", Renderers: []string{"r1"}, Streams: []feed.StreamStatus{
		{Stream: event.StreamKey("g1"), Game: "g1", Length: 8, Consumers: []feed.ConsumerStatus{{Name: "r1", Alive: true}}},
		{Stream: event.StreamKey("g2"), Game: "g2", Length: 3, Dead: 1, Err: "xinfo: connection refused"},
	}}
	e := MustOpenEnv(t, func(c *web.Config) {
		c.Status = func(context.Context) (feed.Status, error) { return st, nil }
	})
	seedLongGame(t, e)
	e.upsert(e.gen("g2").chats(t, 2)...)
	b := mustOpenBrowser(t)
	for _, p := range []struct{ what, path, ready, body string }{
		{"index", "/", `document.querySelector('#index').dataset.state === 'live'`, "#games"},
		{"status", "/status", `document.querySelector('#status').dataset.state === 'live'`, "#streams"},
	} {
		b.do(chromedp.EmulateViewport(1200, 900), chromedp.Navigate(e.url(p.path)))
		b.until(p.what, p.ready)
		if n := b.num(`document.querySelectorAll('` + p.body + ` > tr:not(.empty):not(.more)').length`); n != 2 {
			t.Fatalf("%s: %v rows, want 2", p.what, n)
		}
		check := func(when string) {
			t.Helper()
			if got := b.eval(rowHeaderProblems + `('` + p.body + `')`); len(got) > 0 {
				t.Errorf("%s, %s:\n%s", p.what, when, strings.Join(got, "\n"))
			}
			if role := b.axRole(`document.querySelector('` + p.body + ` > tr').cells[0]`); role != "rowheader" {
				t.Errorf("%s, %s: the first cell's role is %q, want rowheader", p.what, when, role)
			}
		}
		check("served")
		b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + p.body + ` > tr').dataset.old = '1'`))
		b.until(p.what+" refreshed", `document.querySelector('`+p.body+` > tr').dataset.old === undefined`)
		check("refreshed")
	}
	// On a phone the index hides the game's name under its title, in the
	// row header as in the cell it was.
	b.do(chromedp.EmulateViewport(375, 812), chromedp.Navigate(e.url("/")))
	b.until("index on a phone", `document.querySelector('#index').dataset.state === 'live'`)
	if got := b.eval(`Array.from(document.querySelectorAll('#games > tr > :first-child small')).map(s => getComputedStyle(s).display)`); len(got) != 2 || got[0] != "none" || got[1] != "none" {
		t.Errorf("on a phone the game's name under its title shows: display %q, want none", got)
	}
	b.noProblems()
}
