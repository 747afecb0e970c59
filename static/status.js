// codemojex feed: the operator's status page. The server renders the tables
// (templates/status.templ); this script swaps in the same fragment from
// /fragments/status every few seconds.
(function () {
  'use strict';

  var root = document.getElementById('status');
  var body = document.getElementById('status-body');
  var off = document.getElementById('status-offline');
  if (!root || !body || !off) return;

  // The admin token the page was opened with travels on to the fragment,
  // and leaves the address bar and the history at once: a URL with a token
  // is one that gets copied, bookmarked and shared.
  var params = new URLSearchParams(location.search);
  var token = params.get('token');
  var init = token ? { headers: { Authorization: 'Bearer ' + token } } : null;
  if (params.has('token')) {
    params.delete('token');
    var rest = params.toString();
    history.replaceState(history.state, '', location.pathname + (rest ? '?' + rest : '') + location.hash);
  }

  // swap puts in a new fragment where the reader left the old one: each
  // scrolled table (on a phone the streams' table scrolls sideways) keeps
  // its scroll, and a table the keyboard was on keeps the focus. Swapped
  // bare, every refresh threw a phone's reader back to the table's first
  // column, and a keyboard's to the page's start.
  function swap(html) {
    var old = body.querySelectorAll('.scroll');
    var lefts = [], focused = -1;
    for (var i = 0; i < old.length; i++) {
      lefts.push(old[i].scrollLeft);
      if (old[i] === document.activeElement) focused = i;
    }
    body.innerHTML = html;
    var now = body.querySelectorAll('.scroll');
    for (var j = 0; j < now.length && j < lefts.length; j++) now[j].scrollLeft = lefts[j];
    if (focused >= 0 && now[focused]) now[focused].focus({ preventScroll: true });
  }

  // The refresh failing, and its return, are said to screen readers once
  // each, however many refreshes fail in between (common.js's announcer,
  // as the live page's lines): #status-offline says it on screen.
  var say = window.feed.announcer(document.getElementById('status-said'));
  var down = false;

  // The status source failing while the refresh works comes in the
  // fragment, in #status-err, which is swapped in with the rest every 2 s
  // and so can be no live region: its appearing and its clearing are said,
  // once each. A new error's words while it fails (a timeout's duration,
  // an address) are shown, not said: they would be said every refresh. An
  // error the page opened with is in the page, not news.
  function sourceFailing() {
    var err = body.querySelector('#status-err');
    return err && !err.hidden ? err.textContent.trim() || 'unknown error' : '';
  }
  var failing = sourceFailing() !== '';

  window.feed.pollFragment(root, root.dataset.fragment, 2000, init, function (html) {
    swap(html);
    off.hidden = true;
    if (down) say('status live again');
    down = false;
    var fault = sourceFailing();
    if (fault && !failing) say('status source failed: ' + fault);
    else if (!fault && failing) say('status source back');
    failing = fault !== '';
  }, function (e) {
    off.textContent = 'status unavailable: ' + e.message;
    off.hidden = false;
    if (!down) say(off.textContent);
    down = true;
  });
})();
