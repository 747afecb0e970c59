package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/codemojex/feed/store"
	"github.com/codemojex/feed/web"
)

// Held lines that pass the cap drop the oldest held line. The pill then
// replaced the list with the held lines and paged "older lines" from the
// oldest of them: when lines that came late (a re-claim after a crash:
// new seqs, EVT ids older than every line shown) were among those held,
// that was a late line, below the lines the list had shown, and those were
// never shown again. Now the held lines go in at their places, pushing out
// what falls past the cap, and every line is shown again, in order, from
// the pill down. Without late lines (new) the lines dropped are above the
// list's and come back through "older lines" too.
func TestBrowserPillGapWithLateLines(t *testing.T) {
	for _, c := range []struct {
		name  string
		first []int // lines written before the page opens
		then  []int // lines written while the reader is away, in this order
	}{
		// evs[1] and evs[2] come late, then four new lines.
		{"late", []int{0, 3, 4, 5, 6, 7, 8, 9}, []int{1, 2, 10, 11, 12, 13}},
		{"new", []int{0, 1, 2, 3, 4, 5, 6, 7}, []int{8, 9, 10, 11, 12, 13}},
		// A page opened on a game with no lines yet: the held lines fill
		// the list without pushing any line out, and the one dropped must
		// still be offered by "older lines".
		{"empty", nil, []int{0, 1, 2, 3, 4, 5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const cap = 5
			e := MustOpenEnv(t, func(cfg *web.Config) { cfg.PageLines = cap; cfg.DOMLines = cap })
			g := e.gen("g1")
			evs := g.chats(t, 14)
			if len(c.first) == 0 {
				evs = evs[:len(c.then)]
			}
			var first []store.Event
			for _, i := range c.first {
				first = append(first, evs[i])
			}
			if len(first) > 0 {
				e.upsert(first...)
			}
			b := mustOpenBrowser(t)
			b.do(chromedp.EmulateViewport(800, 400), chromedp.Navigate(e.url("/games/g1")))
			b.until("live", `document.querySelector('#conn').dataset.state === 'live'`)
			b.do(chromedp.Evaluate[chromedp.Void](`window.__seen = new Set(); window.__sorted = true;
				const note = () => {
					const ids = Array.from(document.querySelectorAll('#timeline > li')).map(l => l.id);
					ids.forEach(id => window.__seen.add(id));
					if (ids.some((id, i) => i > 0 && ids[i - 1] <= id)) window.__sorted = false;
				};
				new MutationObserver(note).observe(document.getElementById('timeline'), {childList: true});
				document.body.style.paddingBottom = '3000px';
				window.scrollTo(0, document.body.scrollHeight);`))
			b.until("away from the newest", `document.getElementById('timeline').getBoundingClientRect().top < document.querySelector('header.top').getBoundingClientRect().bottom - 100`)

			// Six lines held, one past the cap; none shown.
			for _, ev := range c.then {
				seq := e.upsert(evs[ev])[0]
				b.until("the line", fmt.Sprintf(`document.querySelector('#game').dataset.cursor === '%d'`, seq))
			}
			b.until("pill", `!document.querySelector('#newer').hidden`)
			b.do(chromedp.Click(chromedp.CSS("#newer")))
			b.until("the newest shown", fmt.Sprintf(`document.querySelector('#timeline > li').id === %q`, evs[len(evs)-1].EvtID))
			b.until("at the top", `window.scrollY === 0`) // the pill's scroll done
			pageAllOlder(t, b)
			var missed []string
			for _, id := range evtIDs(evs) {
				if b.num(fmt.Sprintf(`window.__seen.has(%q) ? 1 : 0`, id)) == 0 {
					missed = append(missed, id)
				}
			}
			if len(missed) > 0 {
				t.Fatalf("lines never shown again after the pill: %v (of %v)", missed, evtIDs(evs))
			}
			if b.num(`window.__sorted ? 1 : 0`) == 0 {
				t.Fatalf("the timeline was out of EVT id order at some point")
			}
			b.noProblems()
		})
	}
}
