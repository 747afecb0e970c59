// codemojex feed: the games index and the live game page. No framework, no
// inline script (the CSP forbids it); the server embeds what the script
// needs as data attributes.
(function () {
  'use strict';

  var page = document.body.dataset.page;

  // A CSP violation is a bug: mark it where browser tests can see it.
  document.addEventListener('securitypolicyviolation', function (e) {
    document.documentElement.dataset.csp = 'violated: ' + e.violatedDirective;
  });

  // --- relative times -------------------------------------------------------

  function pad(n) { return n < 10 ? '0' + n : '' + n; }

  // rel returns "just now", "12s ago", "5m ago" for the last hour, else the
  // local clock time (or date, for older than a day).
  function rel(t, now) {
    var d = Math.round((now - t) / 1000);
    if (d < 5) return 'just now';
    if (d < 60) return d + 's ago';
    if (d < 3600) return Math.floor(d / 60) + 'm ago';
    var dt = new Date(t);
    if (d < 86400) return pad(dt.getHours()) + ':' + pad(dt.getMinutes()) + ':' + pad(dt.getSeconds());
    return dt.toLocaleDateString();
  }

  function refreshTimes(root) {
    var now = Date.now();
    var els = root.querySelectorAll('time[datetime]');
    for (var i = 0; i < els.length; i++) {
      var t = Date.parse(els[i].getAttribute('datetime'));
      if (!isNaN(t)) els[i].textContent = rel(t, now);
    }
  }

  refreshTimes(document);
  setInterval(function () { refreshTimes(document); }, 5000);

  var parse = window.feed.parse; // common.js

  if (page === 'index') index();
  if (page === 'game') game();

  // --- games index: refresh the rows every few seconds ------------------------

  function index() {
    var sec = document.getElementById('index');
    var body = document.getElementById('games');
    if (!sec || !body) return;
    window.feed.pollFragment(sec, sec.dataset.rows, 3000, null, function (html) {
      body.innerHTML = html;
      refreshTimes(body);
    });
  }

  // --- game page: the live timeline -----------------------------------------

  function game() {
    var root = document.getElementById('game');
    var list = document.getElementById('timeline');
    var conn = document.getElementById('conn');
    if (!root || !list || !conn) return;

    var seq = Number(root.dataset.seq) || 0; // highest seq seen: the resume cursor
    var attempt = 0;
    var failingSince = 0;
    var ws = null;
    var timer = 0;
    var reloading = false;

    function setState(state, text) {
      conn.dataset.state = state;
      conn.textContent = text || state;
    }

    function noteSeq(n) {
      if (n > seq) {
        seq = n;
        root.dataset.cursor = String(seq);
      }
    }

    // insert puts li at its place by EVT id in the newest-first list (ids
    // sort as strings) and ignores an id already shown.
    function insert(li) {
      if (!li || li.tagName !== 'LI' || !li.id) return false;
      if (document.getElementById(li.id)) return false;
      var items = list.children;
      var lo = 0, hi = items.length;
      while (lo < hi) {
        var mid = (lo + hi) >> 1;
        if (items[mid].id > li.id) lo = mid + 1; else hi = mid;
      }
      list.insertBefore(li, items[lo] || null);
      refreshTimes(li);
      var empty = document.getElementById('empty');
      if (empty) empty.remove();
      return true;
    }

    function onFrame(ev) {
      var f;
      try { f = JSON.parse(ev.data); } catch (e) { return; }
      switch (f.t) {
        case 'line':
          insert(parse(f.html));
          noteSeq(f.seq);
          break;
        case 'state':
          var board = parse(f.html);
          var old = document.getElementById('scoreboard');
          if (board && old) old.replaceWith(board);
          break;
        case 'reset':
          reloading = true;
          setState('reconnecting', 'reloading');
          location.reload();
          break;
      }
    }

    function connect() {
      timer = 0;
      var proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
      var url = proto + '//' + location.host + root.dataset.live + '?after=' + seq;
      // Seqs are per store: the server resets a page from another store.
      if (root.dataset.store) url += '&store=' + encodeURIComponent(root.dataset.store);
      var sock = new WebSocket(url);
      ws = sock;
      sock.onopen = function () {
        attempt = 0;
        failingSince = 0;
        setState('live');
      };
      sock.onmessage = onFrame;
      sock.onclose = function (e) {
        if (ws === sock) ws = null;
        if (reloading) return;
        root.dataset.closeCode = String(e.code);
        retry();
      };
    }

    // retry reconnects with exponential backoff and full jitter, 0.5 s
    // doubling to 20 s; after a minute of failures (or when the browser says
    // it is offline) the state reads "offline", but it keeps trying.
    function retry() {
      if (timer) return;
      attempt++;
      if (!failingSince) failingSince = Date.now();
      var cap = Math.min(20000, 500 * Math.pow(2, attempt - 1));
      var wait = Math.random() * cap;
      var offline = navigator.onLine === false || Date.now() - failingSince > 60000;
      setState(offline ? 'offline' : 'reconnecting');
      timer = setTimeout(connect, wait);
    }

    window.addEventListener('online', function () {
      if (!ws && timer) {
        clearTimeout(timer);
        connect();
      }
    });
    window.addEventListener('offline', function () {
      if (!ws) setState('offline');
    });

    // Older lines: fetch the fragment before the oldest shown id.
    var older = document.getElementById('older');
    if (older) {
      older.addEventListener('click', function (e) {
        e.preventDefault();
        if (older.dataset.busy) return;
        older.dataset.busy = '1';
        fetch(older.getAttribute('href'), { cache: 'no-store' }).then(function (r) {
          if (!r.ok) throw new Error('status ' + r.status);
          var more = r.headers.get('X-More') === 'true';
          return r.text().then(function (html) { return { html: html, more: more }; });
        }).then(function (res) {
          var t = document.createElement('template');
          t.innerHTML = res.html;
          var lis = Array.prototype.slice.call(t.content.children);
          var last = '';
          lis.forEach(function (li) { insert(li); last = li.id || last; });
          if (!res.more || !last) {
            older.remove();
            return;
          }
          older.dataset.before = last;
          older.setAttribute('href', older.getAttribute('href').replace(/before=[^&]*/, 'before=' + encodeURIComponent(last)));
        }).catch(function () {
          older.textContent = 'older lines (retry)';
        }).then(function () { delete older.dataset.busy; });
      });
    }

    setState('connecting');
    connect();
  }
})();
