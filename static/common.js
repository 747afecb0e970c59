// codemojex feed: helpers shared by the page scripts (app.js, replay.js,
// status.js). The layout loads this file before the page script; it defines
// window.feed and nothing else.
(function () {
  'use strict';

  // parse turns one element of server HTML into a node (the server escapes
  // every untrusted field; the CSP backs that up).
  function parse(html) {
    var t = document.createElement('template');
    t.innerHTML = String(html).trim();
    return t.content.firstElementChild;
  }

  // pollFragment fetches the server-rendered HTML at url every ms
  // milliseconds and hands it to show, so the server renders each table once
  // and the script only swaps it in. sec.dataset.state says 'live' or
  // 'offline' (browser tests wait on it); fail, if given, gets the error.
  // init is merged into the fetch options (e.g. headers).
  function pollFragment(sec, url, ms, init, show, fail) {
    var opts = Object.assign({ cache: 'no-store' }, init || {});
    function once() {
      fetch(url, opts).then(function (r) {
        if (!r.ok) throw new Error('status ' + r.status);
        return r.text();
      }).then(function (html) {
        show(html);
        sec.dataset.state = 'live';
      }).catch(function (e) {
        sec.dataset.state = 'offline';
        if (fail) fail(e);
      }).then(function () { setTimeout(once, ms); });
    }
    once();
  }

  // --- announcements to screen readers (docs/live-page.md) -----------------
  //
  // announcer returns a function that says a line (an element, its words
  // and emoji names copied) or a text to screen readers through log, a
  // visually hidden role=log aria-live=polite aria-relevant=additions
  // region. The log keeps the last KEPT announcements, each for KEEP_MS
  // (its removals are not announced): a reader browsing the page would
  // otherwise meet the latest lines a second time, after the timeline and
  // out of its order. 7 s is what React Aria's announcer keeps a message
  // for, long enough for a screen reader to have been told of it. One
  // timer serves the log, due when its oldest copy is: a timer per copy
  // would set 500 for a 500-line backfill, 490 of them for copies already
  // pushed out.
  var KEPT = 10;
  var KEEP_MS = 7000;
  function announcer(log) {
    var timer = 0;
    function sweep() {
      timer = 0;
      var now = Date.now();
      var first = log.firstElementChild;
      while (first && now - first.feedSaid >= KEEP_MS) {
        first.remove();
        first = log.firstElementChild;
      }
      if (first) timer = setTimeout(sweep, first.feedSaid + KEEP_MS - now);
    }
    return function (what) {
      if (!log) return;
      var p = document.createElement('p');
      if (typeof what === 'string') p.textContent = what;
      else {
        var copy = what.cloneNode(true); // the id stays on the line
        while (copy.firstChild) p.appendChild(copy.firstChild);
      }
      p.feedSaid = Date.now();
      log.appendChild(p);
      while (log.children.length > KEPT) log.firstElementChild.remove();
      if (!timer) timer = setTimeout(sweep, KEEP_MS);
    };
  }

  // bursts returns a function that says lines through say, a burst of
  // them as one: the lines that come within BURST_MS of the first are said
  // each when they are at most BURST_LINES, else as their count, in what's
  // words ("12 new lines, the newest:"), and the newest of them by EVT id.
  // Said each, a resume's backfill of a hundred lines, or a replay played
  // fast, was a hundred announcements in the screen reader's queue.
  var BURST_MS = 250;
  var BURST_LINES = 3;
  function bursts(say, what) {
    var lines = [];
    var timer = 0;
    function flush() {
      var ls = lines;
      lines = [];
      timer = 0;
      if (ls.length <= BURST_LINES) {
        ls.forEach(function (li) { say(li); });
        return;
      }
      var newest = ls[0];
      ls.forEach(function (li) { if (li.id > newest.id) newest = li; });
      say(ls.length + ' ' + what + ', the newest:');
      say(newest);
    }
    return function (li) {
      lines.push(li);
      if (!timer) timer = setTimeout(flush, BURST_MS);
    };
  }

  // --- times: one rule on the server and here (docs/live-page.md) ----------
  //
  // A line's <time> shows the writer's clock as HH:MM:SS; a <time
  // class="rel"> (the index) shows its age: "just now" under 5 s, then "12s
  // ago", "5m ago", "3h ago", and past a day the date YYYY-MM-DD. Tooltips
  // read "YYYY-MM-DD HH:MM:SS ZONE". The server renders them in UTC
  // (templates: timeStrings, pgRelative, pgAbsolute); this script renders the
  // same formats in the player's own time zone, named in #tz.

  var zone = 'local';
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || zone; } catch (e) { /* old browser */ }

  function pad(n) { return n < 10 ? '0' + n : '' + n; }
  function ymd(d) { return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()); }
  function hms(d) { return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds()); }

  // rel is pgRelative: whole units, truncated.
  function rel(t, now) {
    var s = Math.floor((now - t) / 1000);
    if (s < 5) return 'just now';
    if (s < 60) return s + 's ago';
    if (s < 3600) return Math.floor(s / 60) + 'm ago';
    if (s < 86400) return Math.floor(s / 3600) + 'h ago';
    return ymd(new Date(t));
  }

  // times renders every <time datetime> under root; relOnly skips the
  // clock times, which do not change.
  function times(root, relOnly) {
    var now = Date.now();
    var els = root.querySelectorAll(relOnly ? 'time.rel[datetime]' : 'time[datetime]');
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      var t = Date.parse(el.getAttribute('datetime'));
      if (isNaN(t)) continue;
      var d = new Date(t);
      el.title = ymd(d) + ' ' + hms(d) + ' ' + zone;
      el.textContent = el.classList.contains('rel') ? rel(t, now) : hms(d);
    }
  }

  window.feed = { parse: parse, pollFragment: pollFragment, times: times, zone: zone, announcer: announcer, bursts: bursts };
})();
