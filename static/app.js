// codemojex feed: the games index and the live game page. No framework, no
// inline script (the CSP forbids it); the server embeds what the script
// needs as data attributes. The page's behaviour is specified in
// docs/live-page.md.
(function () {
  'use strict';

  var page = document.body.dataset.page;
  var feed = window.feed; // common.js
  var parse = feed.parse;

  // A CSP violation is a bug: mark it where browser tests can see it.
  document.addEventListener('securitypolicyviolation', function (e) {
    document.documentElement.dataset.csp = 'violated: ' + e.violatedDirective;
  });

  var tz = document.getElementById('tz');
  if (tz) tz.textContent = feed.zone;
  feed.times(document);
  setInterval(function () { feed.times(document, true); }, 5000);

  var reduced = window.matchMedia('(prefers-reduced-motion: reduce)');

  if (page === 'index') index();
  if (page === 'game') game();

  // --- games index: refresh the rows every few seconds ------------------------

  function index() {
    var sec = document.getElementById('index');
    var body = document.getElementById('games');
    if (!sec || !body) return;
    feed.pollFragment(sec, sec.dataset.rows, 3000, null, function (html) {
      // A keyboard reader on a game's link keeps their place: the link is
      // replaced with the rows, and the focus would fall back to the
      // page's start at every refresh.
      var a = document.activeElement;
      var href = a && a !== body && body.contains(a) ? a.getAttribute('href') : null;
      body.innerHTML = html;
      feed.times(body);
      if (href === null) return;
      var links = body.querySelectorAll('a[href]');
      for (var i = 0; i < links.length; i++) {
        if (links[i].getAttribute('href') === href) {
          links[i].focus({ preventScroll: true });
          return;
        }
      }
    });
  }

  // --- game page ----------------------------------------------------------------

  function game() {
    var root = document.getElementById('game');
    var list = document.getElementById('timeline');
    var log = document.getElementById('log');
    var conn = document.getElementById('conn');
    var pill = document.getElementById('newer');
    var watching = document.getElementById('watching');
    if (!root || !list || !log || !conn || !pill) return;

    var cap = Number(root.dataset.cap) || 500;
    var seq = Number(root.dataset.seq) || 0; // highest seq received: the resume cursor
    // The EVT id of this game's line with the highest seq at or below the
    // cursor ('' for none): sent back, so that a server whose store was
    // renumbered under the same ID (a backup restored) resets the page
    // rather than resume it past lines it does not have.
    var last = root.dataset.last || '';
    var older = document.getElementById('older');
    var gamePath = '/games/' + encodeURIComponent(root.dataset.game);
    var announcer = document.getElementById('announce');

    filters();
    board();

    // --- the timeline: newest first, at most cap lines in the DOM ------------

    // held are lines kept out of the DOM while the reader is away from the
    // newest (new lines, and the newest lines trimmed when older ones paged
    // in), by id. gap: held overflowed, so it no longer joins the DOM's lines.
    var held = {};
    var heldN = 0;
    var gap = false;
    var flushes = 0; // pill clicks, so that a page of older lines asked for before one is let go
    var leftOut = 0; // live lines left to "older lines" (place), so that a page read before one came is asked again

    function headerBottom() {
      var h = document.querySelector('header.top');
      return h ? h.getBoundingClientRect().bottom : 0;
    }

    // atNewest: the top of the timeline is on screen (give or take a line).
    function atNewest() {
      return list.getBoundingClientRect().top >= headerBottom() - 48;
    }

    // slot is the index in the list where the line id goes: newest first,
    // by EVT id (ids sort as strings).
    function slot(id) {
      var items = list.children;
      var lo = 0, hi = items.length;
      while (lo < hi) {
        var mid = (lo + hi) >> 1;
        if (items[mid].id > id) lo = mid + 1; else hi = mid;
      }
      return lo;
    }

    // place inserts li at its place by EVT id. A line older than every line
    // of a full list is left to "older lines".
    function place(li) {
      var items = list.children;
      var lo = slot(li.id);
      var full = items.length >= cap;
      if (full && lo >= items.length) {
        leftOut++;
        pushedOut();
        return false;
      }
      // Make room first, so that the list never holds more than cap.
      if (full) list.lastElementChild.remove();
      list.insertBefore(li, items[lo] || null);
      if (full) pushedOut();
      feed.times(li);
      var empty = document.getElementById('empty');
      if (empty) empty.remove();
      return true;
    }

    // pushedOut points "older lines" at the oldest line shown once a full
    // list let a line go (or left one out), unless the link pages from
    // further up already: lines that came late (old EVT ids) sit below the
    // line it pages from, and the lines between are still to come.
    function pushedOut() {
      var id = list.lastElementChild.id;
      if (older && older.dataset.before > id) id = older.dataset.before;
      setOlder(id);
    }

    function known(id) { return !!(document.getElementById(id) || held[id]); }

    // add takes a live line: into the DOM when the reader is at the newest,
    // else held (nothing they are reading moves) and counted on the pill.
    // Held lines wait for the pill, but those the filter hides bring none:
    // a reader back at the newest sees nothing waiting, and the next live
    // line takes them in with it (hidden, unannounced). Until 7 Dec 2026
    // they held back every later line, shown only through a pill and said
    // only as its "1 new line" (TestBrowserFilterHiddenHeldLines).
    function add(li) {
      if (!li || li.tagName !== 'LI' || !li.id || known(li.id)) return;
      if (pill.hidden && atNewest()) {
        if (heldN > 0) flush();
        if (place(li)) announce(li);
        return;
      }
      hold(li);
      pillText();
    }

    // announce says a live line to screen readers. The timeline is no
    // live region: "older lines" puts pages of old lines into it, and a
    // live region announces every addition (aria-busy only holds the
    // announcement back until the region is no longer busy). So a copy of
    // each live line the reader would see goes into a log of its own
    // (feed.announcer, common.js). Lines the pill shows are not announced
    // (the reader asked for them, and the focus goes to them); the pill's
    // appearance is. A burst (a resume's backfill) is said as one
    // (feed.bursts).
    var say = window.feed.announcer(announcer);
    var sayLine = window.feed.bursts(say, 'new lines');
    function announce(li) {
      if (filterShows(li)) sayLine(li);
    }

    function hold(li) {
      held[li.id] = li;
      heldN++;
      if (heldN > cap) {
        var ids = Object.keys(held).sort();
        delete held[ids[0]];
        heldN--;
        gap = true;
      }
    }

    // flush shows the held lines, each at its place. Held lines that
    // passed the cap (gap) are cap lines above every one dropped, so placed
    // into the list they push out every line below the dropped ones, and
    // "older lines" pages on from the oldest line left (pushedOut): the
    // dropped lines and those pushed out come back through it. The list
    // was replaced with the held lines and paged from the oldest of them,
    // a late line (an old EVT id) if one was held: the lines between it
    // and the next held one, shown before, were never shown again.
    function flush() {
      flushes++;
      var nodes = held;
      var ids = Object.keys(nodes).sort();
      var dropped = gap;
      held = {};
      heldN = 0;
      gap = false;
      // Newest last, so that when the list is full the oldest held lines are
      // the ones left to "older lines".
      for (var i = 0; i < ids.length; i++) place(nodes[ids[i]]);
      // The dropped lines are below every line now shown. A list that
      // held fewer than cap lines (a game with none when the page opened)
      // takes the held ones without pushing a line out, and "older lines"
      // was not offered: the dropped lines were never shown.
      if (dropped && list.lastElementChild) pushedOut();
      pillText();
    }

    // pillText counts the held lines the filter shows on the pill: "new"
    // while they all came live, "newer" once "older lines" pushed some the
    // reader was shown behind it (they are not new, only above the view).
    function pillText() {
      var n = 0, shown = false;
      for (var id in held) {
        if (!filterShows(held[id])) continue;
        n++;
        if (held[id].feedShown) shown = true;
      }
      // Held lines the filter hides wait quietly; the pill shows with the first
      // one the reader would see.
      var appears = pill.hidden && n > 0;
      pill.hidden = n === 0;
      pill.querySelector('.n').textContent = String(n);
      pill.lastChild.textContent = (shown ? ' newer line' : ' new line') + (n === 1 ? '' : 's');
      root.dataset.held = String(heldN);
      // A reader away from the newest sees the pill appear; a screen reader
      // is told once, in the button's own words, so that it can be found.
      // The count's later steps are not announced: in a busy game they would
      // talk over every line being read.
      if (appears) say(String(n) + pill.lastChild.textContent);
    }

    pill.addEventListener('click', function () {
      flush();
      window.scrollTo({ top: 0, behavior: reduced.matches ? 'auto' : 'smooth' });
      log.focus({ preventScroll: true });
    });

    // Held lines wait for the pill even when the reader scrolls back up by
    // hand: flushing on scroll would fight "older lines" on a short page,
    // and the pill is in sight at the top anyway.

    // --- older lines -----------------------------------------------------------

    function setOlder(before) {
      if (!older) {
        older = document.createElement('a');
        older.id = 'older';
        older.className = 'older';
        older.textContent = 'older lines';
        log.after(older);
        older.addEventListener('click', loadOlder);
      }
      older.dataset.before = before;
      // Followed (a new tab), the link opens a page of those lines; a click
      // here fetches them as a fragment (pageOlder).
      older.href = gamePath + '?before=' + encodeURIComponent(before);
    }
    if (older) older.addEventListener('click', loadOlder);

    function loadOlder(e) {
      e.preventDefault();
      pageOlder();
    }

    // A press of "older lines" under a filter pages on, while its pages
    // bring no line the filter shows, until it has brought half the cap
    // (three pages of 100 by default; every line paged in takes a place in
    // the list, hidden or not) or OLDER_PAGES pages, or the game's beginning.
    var OLDER_PAGES = 10;

    // pageOlder pages in the lines before the oldest shown. When the list
    // would pass the cap, the newest lines go (held, for the pill) and the
    // view is held still against their removal. press counts what this
    // press of the link brought so far (the pages it went on to).
    function pageOlder(press) {
      var a = older;
      if (!a || a.dataset.busy) return;
      a.dataset.busy = '1';
      press = press || { pages: 0, lines: 0, shown: false };
      var from = a.dataset.before, asked = flushes, outs = leftOut, again = false, on = false;
      var url = gamePath + '/older?before=' + encodeURIComponent(from);
      fetch(url, { cache: 'no-store' }).then(function (r) {
        // A 404 is a game the store no longer has (pruned while the page
        // was open): there is nothing older to page, and the paging ends
        // as on an empty last page. Any other failure offers a retry.
        if (r.status === 404) return { html: '', more: false };
        if (!r.ok) throw new Error('status ' + r.status);
        var more = r.headers.get('X-More') === 'true';
        return r.text().then(function (html) { return { html: html, more: more }; });
      }).then(function (res) {
        a.textContent = 'older lines'; // after a failed try: it worked now
        // Lines left the list while the page came (a live line at the cap
        // pushed the oldest out, or the pill replaced the list): the link
        // moved up to the oldest line still shown, and the page, from below
        // the lines pushed out, no longer joins the list. Put in, it would
        // leave them out for good, a gap no paging fills. It is dropped and
        // asked for again from where the link now pages, unless the reader
        // went to the newest lines meanwhile (the pill). So is a page asked
        // for before a live line was left to "older lines" (it came late,
        // older than every line of a full list): the line sits below the
        // link, and the page, read before it was stored, may lack it. Put in,
        // it moved the link past the line, never shown (until 7 Dec 2026;
        // TestBrowserLateLineDuringOlderPage).
        if (older !== a || a.dataset.before !== from || leftOut !== outs) {
          again = older === a && asked === flushes;
          return;
        }
        var t = document.createElement('template');
        t.innerHTML = res.html;
        var lis = Array.prototype.slice.call(t.content.children);
        // The reader is at the bottom, where they clicked: the line above the
        // link stays where it is while lines leave the top.
        var anchor = list.lastElementChild;
        var top = anchor ? anchor.getBoundingClientRect().top : 0;
        // The page's last line is where the next one starts, shown or not:
        // lines already known (late ones, below the link's line) are not
        // shown twice, and do not end the paging.
        var last = '';
        press.pages++;
        lis.forEach(function (li) {
          if (!li.id) return;
          last = li.id;
          press.lines++;
          if (known(li.id)) return;
          if (filterShows(li)) press.shown = true;
          while (list.children.length >= cap && list.firstElementChild) {
            var newest = list.firstElementChild;
            newest.remove();
            newest.feedShown = true; // the pill calls it newer, not new
            hold(newest);
          }
          // At its place, not at the end: a line that came late (a new
          // seq, an old EVT id) may already sit below the lines paged in.
          list.insertBefore(li, list.children[slot(li.id)] || null);
          feed.times(li);
        });
        if (anchor) window.scrollBy(0, anchor.getBoundingClientRect().top - top);
        pillText();
        // Under a filter, a page may hold no line it shows (a page of chat
        // under "guesses and wins"): the press would add nothing the reader
        // sees, and tell a screen reader on the link nothing. It pages on,
        // and says so when it stops with none (olderNone).
        var hidden = root.dataset.filter !== 'all' && !press.shown;
        if (!res.more || !last) {
          // A keyboard reader who paged with the link keeps their place:
          // removed with it, the focus fell to the body, where a screen
          // reader loses its place and some browsers tab from the top.
          var focused = document.activeElement === a;
          if (hidden) olderNone(a, press, true);
          a.remove();
          if (focused) log.focus({ preventScroll: true });
          older = null;
          return;
        }
        setOlder(last);
        if (!hidden) return;
        if (press.pages < OLDER_PAGES && press.lines < cap / 2) on = true;
        else olderNone(a, press, false);
      }).catch(function () {
        a.textContent = 'older lines (retry)';
      }).then(function () {
        delete a.dataset.busy;
        if (again || on) pageOlder(press);
      });
    }

    // olderNone tells the reader that a press of "older lines" under a
    // filter brought no line it shows: on the page (the link's words, or a
    // note where the link was once the game's beginning is reached) and to
    // a screen reader, politely, through the announcements' log the pill's
    // appearance is said in (the reader is on the link, and nothing else
    // changes where they are).
    function olderNone(a, press, end) {
      var what = press.lines === 0 ? 'no older lines' :
        press.lines + ' older line' + (press.lines === 1 ? '' : 's') + ', all hidden by the filter';
      if (end) {
        var note = document.createElement('p');
        note.id = 'older-none';
        note.className = 'older older-none';
        note.textContent = 'the beginning of the game: ' + what;
        a.after(note);
        say(note.textContent);
        return;
      }
      a.textContent = 'older lines (' + what + ')';
      say(what + '; older lines go on');
    }

    // --- filter: everything, no chat, or guesses and wins -------------------------

    function filterShows(li) {
      var f = root.dataset.filter, k = li.dataset.kind;
      if (f === 'nochat') return k !== 'chat';
      if (f === 'plays') return k === 'guess' || k === 'round_won' || k === 'game_over';
      return true;
    }

    // filters wires the select; CSS hides by root[data-filter], so live
    // lines follow the choice too. The choice is this browser's
    // (localStorage), for every game.
    function filters() {
      var key = 'codemojex.filter';
      var sel = document.getElementById('filter');
      if (!sel) return;
      var v = 'all';
      try { v = localStorage.getItem(key) || v; } catch (e) { /* storage off */ }
      set(v);
      sel.addEventListener('change', function () {
        set(sel.value);
        // What a press under the old filter found hidden may show now.
        var none = document.getElementById('older-none');
        if (none) none.remove();
        if (older && / hidden by the filter\)$/.test(older.textContent)) older.textContent = 'older lines';
        try { localStorage.setItem(key, root.dataset.filter); } catch (err) { /* storage off */ }
        pillText();
      });
      function set(v) {
        if (!/^(all|nochat|plays)$/.test(v)) v = 'all';
        root.dataset.filter = v;
        sel.value = v;
      }
    }

    // --- scoreboard: open on wide screens, a one-line summary on phones -------

    // The panel is a disclosure: a button in its heading (aria-expanded)
    // shows or hides its body. The server serves it open (it reads without
    // this script); it is collapsed here on a phone. A collapsed body is
    // hidden until found, as a closed <details> was: the browser's find
    // in page still finds a player's name in it, and opens it.
    function board() {
      var wide = window.matchMedia('(min-width: 860px)');
      setOpen(document.getElementById('scoreboard'), wide.matches);
      wide.addEventListener('change', function () {
        setOpen(document.getElementById('scoreboard'), wide.matches);
      });
      // One listener for every panel: a frame replaces the panel, button
      // and all.
      root.addEventListener('click', function (e) {
        var t = e.target.closest && e.target.closest('#scoreboard .board-toggle');
        if (t) setOpen(document.getElementById('scoreboard'), !isOpen(document.getElementById('scoreboard')));
      });
      root.addEventListener('beforematch', function (e) {
        var panel = document.getElementById('scoreboard');
        if (panel && panel.contains(e.target)) setOpen(panel, true);
      });
    }

    function isOpen(panel) {
      var t = panel && panel.querySelector('.board-toggle');
      return !!t && t.getAttribute('aria-expanded') === 'true';
    }

    function setOpen(panel, open) {
      var t = panel && panel.querySelector('.board-toggle');
      var body = panel && panel.querySelector('.board-body');
      if (!t || !body) return;
      t.setAttribute('aria-expanded', String(open));
      if (open) body.hidden = false; else body.setAttribute('hidden', 'until-found');
    }

    function replaceBoard(next) {
      var old = document.getElementById('scoreboard');
      if (!next || !old) return;
      setOpen(next, isOpen(old)); // the reader's choice stays
      // So does a keyboard reader's place: the button (the panel's one
      // control) they are on is replaced too, and the focus would fall
      // back to the page's start at every update.
      var focused = old.querySelector('.board-toggle') === document.activeElement;
      old.replaceWith(next);
      var t = focused && next.querySelector('.board-toggle');
      if (t) t.focus({ preventScroll: true });
    }

    // patchBoard applies a board frame: a panel in which a stub
    // <li data-keep data-player="NAME"> stands for the row this page shows
    // for NAME (the server stubs the rows that did not change since its
    // last panel). It returns false when a stub has no such row: the page
    // missed a panel, and a new socket starts with a whole one.
    function patchBoard(html) {
      var next = parse(html);
      var old = document.getElementById('scoreboard');
      if (!next || !old) return true;
      var rows = new Map();
      old.querySelectorAll('li[data-player]').forEach(function (li) {
        rows.set(li.getAttribute('data-player'), li);
      });
      // Every stub is looked up before any row moves: a row moved into the
      // new panel leaves the page's, and a frame found wanting half-way
      // left the scoreboard without those players until the new socket's
      // whole panel (until 7 Dec 2026; TestBrowserBoardPatches).
      var stubs = next.querySelectorAll('li[data-keep]');
      var kept = [];
      for (var i = 0; i < stubs.length; i++) {
        var row = rows.get(stubs[i].getAttribute('data-player'));
        if (!row) return false;
        kept.push(row);
      }
      for (var j = 0; j < stubs.length; j++) stubs[j].replaceWith(kept[j]);
      replaceBoard(next);
      return true;
    }

    // --- the connection -------------------------------------------------------------

    // The feed comes over a websocket, or over an event stream (EventSource)
    // where a proxy refuses or drops websockets: same frames, same cursor.
    // After SWITCH_AFTER tries in a row that never got a frame while the
    // server answered plain HTTP, the page switches to the other transport
    // (docs/live-page.md, "Where websockets are blocked").
    var SWITCH_AFTER = 2;
    var OPEN_WITHIN = 10000; // ms for a connection to bring its first frame
    var transport = window.WebSocket ? 'ws' : 'sse';
    var misses = 0; // tries in a row of this transport that never got a frame

    var attempt = 0;
    var failingSince = 0;
    var openedAt = 0; // when the current connection brought its first frame
    var ws = null; // the open WebSocket or EventSource
    var timer = 0;
    var probe = 0;
    var opening = 0; // timer: the connection must bring a frame within OPEN_WITHIN
    var got = false; // the current connection brought a frame
    var upgrade = 0; // timer: on the event stream, try a websocket again
    var trying = new Set(); // those tries' sockets, until their first frame or their end
    var upgradeWait = 0; // ms before that try; doubles while websockets fail
    var reloading = false;
    // A visible page whose socket brought nothing for QUIET ms probes it:
    // a connection that died without a word (a NAT that forgot it, the
    // server's host cut off) reads as open, and the reader would watch a
    // "live" page that shows nothing new until the tab was hidden and
    // shown again or the network came and went.
    var QUIET = Number(root.dataset.quietMs) || 45000;
    var heard = Date.now(); // the current connection's last frame (or ping), or its start
    // An event stream cannot be probed; its server pings it instead (a
    // ping event, its data the period in ms). A visible, online stream
    // that brought nothing, not even a ping, for two periods and STALE_MARGIN
    // ms died without a word, and is taken anew from the cursor. The
    // margin keeps a slow ping from costing the server a new stream and
    // its backfill: the pings of the nbio engine's sweep come up to 1 s
    // late, and one stuck behind a lost packet a few seconds more.
    var STALE_MARGIN = 5000;
    var pingMs = 0; // the current stream's ping period, once it sent one

    // setState shows the connection's state. #conn is a polite live
    // region, and text put into it is said even when it is the same words:
    // the text is put only when it changes, so that "reconnecting" is said
    // once however many tries the backoff makes, not at each
    // (TestBrowserConnStateSaidOnce).
    function setState(state, text) {
      conn.dataset.state = state;
      text = text || state;
      if (conn.textContent !== text) conn.textContent = text;
    }

    function noteSeq(n) {
      if (n > seq) {
        seq = n;
        root.dataset.cursor = String(seq);
      }
    }

    function onFrame(ev) {
      // Any frame proves the connection alive: one that comes while the
      // page says "offline" (the browser said its network went, yet the
      // socket still brings frames) makes it "live" again.
      stopProbe();
      heard = Date.now();
      var f = null;
      try { f = JSON.parse(ev.data); } catch (e) { /* below */ }
      // A reset (the server does not know the cursor) reloads the page.
      // It comes as the connection's first frame, and it is no return to
      // live: until 7 Dec 2026 the page said "live", to a screen reader
      // too, then "reloading" (TestBrowserResetReloads).
      if (f && f.t === 'reset') {
        if (opening) { clearTimeout(opening); opening = 0; }
        reloading = true;
        setState('reconnecting', 'reloading');
        location.reload();
        return;
      }
      if (!got) opened();
      else if (conn.dataset.state !== 'live' && !reloading) setState('live');
      if (!f || typeof f !== 'object') {
        // Not a frame: one damaged on its way (cut short, seen once in a
        // chaos run) may have been a line. Ignored, it would leave a gap;
        // a new connection from the cursor brings that line again.
        resume();
        return;
      }
      switch (f.t) {
        case 'line':
          add(parse(f.html));
          if (f.seq > seq && typeof f.id === 'string') last = f.id;
          noteSeq(f.seq);
          break;
        case 'state':
          replaceBoard(parse(f.html));
          break;
        case 'board':
          if (!patchBoard(f.html)) resume();
          break;
        case 'watching':
          if (watching) {
            var n = Number(f.n) || 0;
            watching.dataset.n = String(n);
            watching.querySelector('.n').textContent = String(n);
          }
          break;
      }
    }

    // resume takes a new connection from the cursor, which backfills what
    // this one missed, with the backoff (retry): a frame damaged the same
    // way on every connection must not have the page reconnect as fast as
    // the server answers. A socket's close resumes it through onclose (and
    // the messages already received are dropped); a stream has none, and is
    // let go and tried again as one that ended (it was restarted at once,
    // the backoff set back to nothing).
    function resume() {
      if (!ws) return;
      if (isSocket(ws)) { ws.close(); return; }
      stopProbe();
      release();
      lost();
    }

    // opened: the connection works (it brought a frame; a proxy that
    // buffers an event stream lets it open and hold every frame back).
    function opened() {
      got = true;
      if (opening) { clearTimeout(opening); opening = 0; }
      openedAt = Date.now(); // the backoff is reset once it lasted (retry)
      failingSince = 0;
      misses = 0;
      root.dataset.transport = transport;
      setState('live');
      if (transport === 'sse') scheduleUpgrade();
    }

    function liveURL(path) {
      // board=1: this script applies board frames (patchBoard).
      var url = path + '?after=' + seq + '&last=' + encodeURIComponent(last) + '&board=1';
      // Seqs are per store: the server resets a page from another store.
      if (root.dataset.store) url += '&store=' + encodeURIComponent(root.dataset.store);
      return url;
    }

    function connect() {
      timer = 0;
      got = false;
      heard = Date.now();
      pingMs = 0;
      if (transport === 'sse') openStream(); else openSocket();
      opening = setTimeout(function () { opening = 0; if (!got) restart(true); }, OPEN_WITHIN);
    }

    function newSocket() {
      var proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
      return new WebSocket(proto + '//' + location.host + liveURL(root.dataset.live));
    }

    function wireSocket(sock) {
      sock.onmessage = onFrame;
      sock.onclose = function (e) {
        if (ws !== sock) return; // a socket already given up on
        ws = null;
        // A probe of this socket must not time out on the next one.
        stopProbe();
        if (reloading) return;
        root.dataset.closeCode = String(e.code);
        // A close frame of the server's (its store failed, it shuts down)
        // came through whatever is in between: websockets work, and a try
        // that ended so is no miss.
        lost(e.wasClean);
      };
    }

    function openSocket() {
      ws = newSocket();
      wireSocket(ws);
    }

    // scheduleUpgrade: a page on the event stream tries a websocket again
    // after 30 s, then after twice as long each time it fails, up to 10
    // min: the proxy that refused them may be gone (a laptop that left the
    // office network), or the server refused them for a while (full).
    function scheduleUpgrade() {
      if (upgrade || !window.WebSocket) return;
      if (!upgradeWait) upgradeWait = Number(root.dataset.upgradeMs) || 30000;
      upgrade = setTimeout(tryUpgrade, upgradeWait / 2 + Math.random() * upgradeWait / 2);
    }

    // tryUpgrade opens a websocket beside the stream. Its first frame makes
    // it the connection and the stream is let go: the socket's backfill
    // starts from the cursor, and lines both bring are shown once.
    function tryUpgrade() {
      upgrade = 0;
      if (transport !== 'sse' || !ws || reloading) return;
      var sock = newSocket();
      var give = setTimeout(function () { sock.close(); }, OPEN_WITHIN);
      sock.feedGive = give;
      trying.add(sock);
      sock.onmessage = function (ev) {
        clearTimeout(give);
        trying.delete(sock);
        if (transport !== 'sse' || !ws || reloading) { sock.onclose = null; sock.close(); return; }
        release();
        transport = 'ws';
        upgradeWait = 0;
        ws = sock;
        wireSocket(sock);
        root.dataset.transport = transport;
        onFrame(ev);
      };
      sock.onclose = function () {
        clearTimeout(give);
        trying.delete(sock);
        if (ws === sock) return;
        upgradeWait = Math.min(upgradeWait * 2, 600000);
        if (transport === 'sse' && ws) scheduleUpgrade();
      };
    }

    function openStream() {
      // The EventSource's own reconnects are not used: they would not back
      // off with jitter, and the page's cursor is in the URL.
      var es = new EventSource(liveURL(root.dataset.events));
      ws = es;
      es.onmessage = onFrame;
      // A ping proves the stream alive, as a frame does, and says how
      // often the next one comes (a server from before pings sends none:
      // its streams are checked only on a wake, as they were).
      es.addEventListener('ping', function (ev) {
        if (ws !== es) return;
        heard = Date.now();
        pingMs = Number(ev.data) || 0;
        if (got && conn.dataset.state !== 'live' && !reloading) setState('live');
      });
      es.onerror = function () {
        if (ws !== es) return;
        ws = null;
        es.close();
        if (reloading) return;
        lost();
      };
    }

    // lost: the connection ended; try again, switching transports after
    // SWITCH_AFTER tries in a row that never got a frame while the server
    // answered plain HTTP. A try made while the server is down (a replica
    // restarting) is no miss: the transport is not to blame, and an event
    // stream costs the server more than a websocket. Nor is one the server
    // ended with a close frame of its own (spoke): the socket worked.
    function lost(spoke) {
      if (opening) { clearTimeout(opening); opening = 0; }
      if (!got && !spoke) {
        var t = transport;
        fetch('/healthz', { cache: 'no-store' }).then(function (r) {
          if (r.ok) miss(t);
        }, function () { /* the server is down */ });
      }
      retry();
    }

    function miss(t) {
      if (t !== transport || ++misses < SWITCH_AFTER) return;
      misses = 0;
      var other = transport === 'ws' ? 'sse' : 'ws';
      if (other === 'sse' ? window.EventSource : window.WebSocket) transport = other;
    }

    // retry reconnects with exponential backoff and full jitter, 0.5 s
    // doubling to 20 s; after a minute of failures (or when the browser says
    // it is offline) the state reads "offline", but it keeps trying. The
    // backoff starts over after a connection that lasted OPEN_WITHIN past
    // its first frame, not at that frame: a server whose every connection
    // ends right after it (its backfill read fails, a frame cut the same
    // way each time) was tried again within 0.5 s for ever, by every page.
    function retry() {
      if (timer) return;
      if (got && Date.now() - openedAt >= OPEN_WITHIN) attempt = 0;
      attempt++;
      if (!failingSince) failingSince = Date.now();
      var c = Math.min(20000, 500 * Math.pow(2, attempt - 1));
      var offline = navigator.onLine === false || Date.now() - failingSince > 60000;
      setState(offline ? 'offline' : 'reconnecting');
      timer = setTimeout(connect, Math.random() * c);
    }

    // now drops the backoff and connects at once from the cursor.
    function now() {
      if (timer) clearTimeout(timer);
      timer = 0;
      attempt = 0;
      connect();
    }

    function isSocket(c) { return !!window.WebSocket && c instanceof WebSocket; }

    // release lets go of the connection without hearing its end (a socket
    // closes with code and reason when given).
    function release(code, reason) {
      var dead = ws;
      ws = null;
      if (opening) { clearTimeout(opening); opening = 0; }
      if (!dead) return;
      dead.onmessage = null;
      dead.onclose = null;
      dead.onerror = null;
      try { dead.close(code, reason); } catch (e) { /* already closing */ }
    }

    // restart gives up on the connection and takes a new one from the
    // cursor: at once after a silent connection; through lost, with the
    // backoff, for one that brought nothing within OPEN_WITHIN (failed).
    function restart(failed) {
      stopProbe();
      release();
      if (failed) { lost(); return; }
      setState('reconnecting');
      now();
    }

    function stopProbe() {
      if (probe) { clearTimeout(probe); probe = 0; }
    }

    // drop gives up on a connection that does not answer (a phone's
    // connection that died while the tab slept keeps looking open), or a
    // stream whose pings stopped, and resumes.
    function drop() { restart(false); }

    // wake checks the connection as soon as the tab is back: a closed one
    // reconnects at once; an open socket must answer a probe within 3 s. An
    // event stream cannot be asked, so it is taken anew from the cursor.
    function wake() {
      root.dataset.woke = String((Number(root.dataset.woke) || 0) + 1);
      if (reloading) return;
      if (!ws) { now(); return; }
      if (!isSocket(ws)) { drop(); return; }
      ask();
    }

    // ask probes the open socket: any frame within 3 s proves it alive,
    // else it is dropped and the page resumes from its cursor.
    function ask() {
      if (ws.readyState !== WebSocket.OPEN || probe) return;
      try { ws.send('{"t":"probe"}'); } catch (e) { drop(); return; }
      probe = setTimeout(drop, 3000);
    }

    // A hidden tab is left alone (its timers are throttled, and wake
    // checks it when it is shown), and so is an offline one (the 'online'
    // event checks it). A quiet socket is probed; a stream silent past
    // its pings is dropped (one that has not opened yet is left to
    // OPEN_WITHIN).
    setInterval(function () {
      if (reloading || !ws || document.visibilityState !== 'visible' || navigator.onLine === false) return;
      if (!isSocket(ws)) {
        if (got && pingMs && Date.now() - heard > 2 * pingMs + STALE_MARGIN) drop();
        return;
      }
      if (Date.now() - heard < QUIET) return;
      heard = Date.now();
      ask();
    }, Math.min(QUIET / 3, 1000));

    document.addEventListener('visibilitychange', function () {
      if (document.visibilityState === 'visible') wake();
    });
    window.addEventListener('pageshow', function (e) { if (e.persisted) wake(); });
    // A page kept in the back/forward cache is nobody watching: it lets go
    // of its connection and takes a new one from its cursor if it comes back.
    window.addEventListener('pagehide', function (e) {
      if (!e.persisted) return;
      if (timer) { clearTimeout(timer); timer = 0; }
      stopProbe();
      if (upgrade) { clearTimeout(upgrade); upgrade = 0; }
      // A websocket tried beside the event stream and still waiting for
      // its first frame goes too: left open, it held a socket (and the
      // proxy's connection) for a page nobody watches. Shown again, the
      // page takes a new stream and tries a websocket later, as it does
      // whenever it is on the stream (TestBrowserBackForwardCacheUpgradeTry).
      trying.forEach(function (sock) {
        clearTimeout(sock.feedGive);
        sock.onmessage = null;
        sock.onclose = null;
        try { sock.close(1000, 'page hidden'); } catch (err) { /* already closing */ }
      });
      trying.clear();
      release(1000, 'page hidden');
      // Restored, it holds no connection until the new one's first frame
      // (opened): it must not say "live" meanwhile.
      if (!reloading) setState('reconnecting');
    });
    // A network that comes back may have left the socket dead without a
    // word (a phone that lost its signal): it is checked as on a wake. A
    // socket still opening was tried while the network was gone: its
    // handshake may hang on the dead link until OPEN_WITHIN, or its failure
    // be on its way, and the backoff after it kept the page away from the
    // network that is back. It is let go, and wake connects at once; until
    // 7 Dec 2026 the page waited for it, then said "reconnecting"
    // (TestBrowserOnlineDropsOpeningTry).
    window.addEventListener('online', function () {
      if (!reloading && ws && isSocket(ws) && ws.readyState === WebSocket.CONNECTING) {
        stopProbe();
        release();
      }
      wake();
    });
    // The browser says its network went: the page says so at once, even
    // if its socket still reads as open (nothing told either end; the
    // socket would notice only when a write times out, minutes later).
    // The socket is kept: a frame it still brings says "live" again, and
    // the 'online' event checks it.
    window.addEventListener('offline', function () { if (!reloading) setState('offline'); });

    setState('connecting');
    connect();
  }
})();
