// codemojex feed: replay a stored game at 1×–50× with play/pause and a
// position slider. The timeline (EVT id order, oldest first) comes from
// /games/{game}/timeline.json, a page at a time; what is committed after
// (late lines with old EVT ids too) comes from ?since=SEQ, every few
// seconds while the tab is in sight.
(function () {
  'use strict';

  var root = document.getElementById('replay');
  var list = document.getElementById('timeline');
  var play = document.getElementById('play');
  var speed = document.getElementById('speed');
  var pos = document.getElementById('pos');
  var posText = document.getElementById('postext');
  if (!root || !list) return;

  var entries = [];
  var shown = 0; // entries[0:shown] are in the list, newest first
  var playing = false;
  var timer = 0;
  var since = -1; // seq from which ?since= goes on: every line at or below it is in entries
  var storeID = ''; // the store those seqs belong to
  var pollTimer = 0;
  var polling = false; // a ?since= request is on its way
  var POLL_MS = 5000;

  // A gap of writer time longer than this is shortened: a stalled game must
  // not stall the replay.
  var maxGap = 5000;

  var parse = window.feed.parse; // common.js
  // Lines played are said to screen readers as they appear, those played
  // in a burst (a fast speed, lines written together) as one (feed.bursts);
  // lines a seek puts in are not (the slider says where it is). So is a
  // failure to load the timeline, or a timeline that changed under the
  // page: the position's text, which says so on screen, is no live region,
  // as it moves with every line played.
  var say = window.feed.announcer(document.getElementById('announce'));
  var sayPlayed = window.feed.bursts(say, 'lines played');

  // A 404 from timeline.json: the store no longer has the game (feedctl
  // prune deleted it), which no retry or reload brings back.
  var GONE = 'gone';

  // gone says that the game is no longer stored, on screen and to a
  // screen reader, and ends the polling (schedule asks for 'ready').
  function gone(what) {
    root.dataset.state = 'gone';
    posText.textContent = 'this game is no longer stored: ' + what;
    say(posText.textContent);
  }

  function show(n) {
    n = Math.max(0, Math.min(entries.length, n));
    while (shown < n) {
      var li = parse(entries[shown].html);
      if (li) {
        window.feed.times(li); // the live page's rule: clock times in the player's zone
        list.insertBefore(li, list.firstChild);
      }
      else list.insertBefore(document.createElement('li'), list.firstChild);
      shown++;
    }
    while (shown > n) {
      if (list.firstChild) list.removeChild(list.firstChild);
      shown--;
    }
    pos.value = String(shown);
    place();
    root.dataset.pos = String(shown);
  }

  // place says where the replay is: on screen "3 / 40", and to a screen
  // reader on the slider, in words, "3 of 40 lines" (its bare value said
  // nothing of how many there are; TestBrowserReplayPositionSaid).
  function place() {
    posText.textContent = shown + ' / ' + entries.length;
    pos.setAttribute('aria-valuetext', shown + ' of ' + entries.length + ' lines');
  }

  function at(i) {
    var t = Date.parse(entries[i].at);
    return isNaN(t) || t <= 0 ? NaN : t;
  }

  function delay() {
    if (shown === 0 || shown >= entries.length) return 0;
    var gap = at(shown) - at(shown - 1);
    if (isNaN(gap)) gap = 250;
    gap = Math.max(0, Math.min(maxGap, gap));
    return gap / (Number(speed.value) || 1);
  }

  function step() {
    timer = 0;
    if (!playing) return;
    if (shown >= entries.length) {
      setPlaying(false);
      return;
    }
    show(shown + 1);
    if (list.firstElementChild && list.firstElementChild.id) sayPlayed(list.firstElementChild);
    timer = setTimeout(step, delay());
  }

  function setPlaying(on) {
    playing = on;
    play.dataset.state = on ? 'playing' : 'paused';
    // The symbol is aria-hidden: the button is named by its word alone.
    play.querySelector('.glyph').textContent = on ? '❚❚ ' : '▶ ';
    play.querySelector('.word').textContent = on ? 'pause' : 'play';
    if (timer) { clearTimeout(timer); timer = 0; }
    if (on) {
      if (shown >= entries.length) show(0);
      timer = setTimeout(step, delay());
    }
  }

  play.addEventListener('click', function () { setPlaying(!playing); });
  pos.addEventListener('input', function () { show(Number(pos.value) || 0); });
  speed.addEventListener('change', function () { if (playing) setPlaying(true); });

  // The timeline comes a page at a time (the server bounds each response);
  // every page is loaded before play is offered, so the slider's range is
  // the whole game.
  function load(after) {
    var url = root.dataset.timeline + (after ? '?after=' + encodeURIComponent(after) : '');
    return fetch(url, { cache: 'no-store' }).then(function (r) {
      if (r.status === 404) throw new Error(GONE);
      if (!r.ok) throw new Error('status ' + r.status);
      return r.json();
    }).then(function (page) {
      var got = page && Array.isArray(page.entries) ? page.entries : [];
      // The first page's seq, read before it: a line committed while the
      // later pages load (a late one may fall below their cursor) has a
      // higher one, and comes through ?since=.
      if (since < 0) {
        since = Number(page && page.seq) || 0;
        storeID = (page && page.store) || '';
      }
      entries = entries.concat(got);
      posText.textContent = 'loading… ' + entries.length;
      if (page && page.next && got.length > 0) return load(page.next);
    });
  }

  // merge puts an entry committed since the load at its place by EVT id,
  // and into the list when that place is among the lines shown: a late line
  // (a re-claimed older event) appears where it belongs, without a reload.
  function merge(e) {
    if (!e || typeof e.id !== 'string') return;
    var lo = 0, hi = entries.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (entries[mid].id < e.id) lo = mid + 1; else hi = mid;
    }
    if (lo < entries.length && entries[lo].id === e.id) return; // loaded already
    entries.splice(lo, 0, e);
    if (lo < shown) {
      // entries[i] shown is the list's child shown-1-i (newest first).
      var li = parse(e.html) || document.createElement('li');
      window.feed.times(li);
      list.insertBefore(li, list.children[shown - lo] || null);
      shown++;
    }
  }

  function counts() {
    pos.max = String(entries.length);
    pos.value = String(shown);
    place();
    root.dataset.pos = String(shown);
    root.dataset.count = String(entries.length);
    play.disabled = entries.length === 0;
  }

  // poll asks for what was committed since the last seq seen. Seqs are one
  // store's: answered from another (a balancer that moved the page to
  // another host), they mean nothing here, and the view says the timeline
  // may have changed instead.
  function poll() {
    pollTimer = 0;
    if (document.hidden) return; // visibilitychange polls again
    polling = true;
    var url = root.dataset.timeline + '?since=' + since;
    fetch(url, { cache: 'no-store' }).then(function (r) {
      if (r.status === 404) return null;
      if (!r.ok) throw new Error('status ' + r.status);
      return r.json();
    }).then(function (page) {
      polling = false;
      if (page === null) {
        // Deleted while open: what was loaded still plays, and asking
        // again every few seconds would bring nothing.
        gone('the lines loaded still play');
        return;
      }
      if (storeID && page && page.store && page.store !== storeID) {
        root.dataset.state = 'changed';
        posText.textContent = 'the timeline changed: reload to see it';
        say(posText.textContent);
        return;
      }
      var got = page && Array.isArray(page.entries) ? page.entries : [];
      got.forEach(merge);
      var n = Number(page && page.seq) || 0;
      if (n > since) since = n;
      if (got.length > 0) counts();
      schedule(got.length > 0 ? 0 : POLL_MS); // a full page may have more behind it
    }).catch(function () {
      polling = false;
      schedule(POLL_MS);
    });
  }

  function schedule(ms) {
    if (!pollTimer && !polling && root.dataset.state === 'ready') pollTimer = setTimeout(poll, ms);
  }

  document.addEventListener('visibilitychange', function () {
    if (!document.hidden) schedule(0);
  });

  // ready offers the entries loaded to play, from the start.
  function ready() {
    pos.max = String(entries.length);
    pos.disabled = false;
    play.disabled = entries.length === 0;
    root.dataset.state = 'ready';
    show(0);
  }

  load('').then(function () {
    ready();
    schedule(0); // what was committed while the pages loaded
  }).catch(function (e) {
    if (e.message === GONE) {
      // Deleted between two pages: the pages loaded still play, as they
      // do for a game deleted once loaded; they were thrown away.
      if (entries.length > 0) {
        ready();
        gone('the lines loaded still play');
        return;
      }
      gone('nothing to replay');
      return;
    }
    root.dataset.state = 'error';
    posText.textContent = 'could not load the timeline (' + e.message + ')';
    say(posText.textContent);
  });
})();
