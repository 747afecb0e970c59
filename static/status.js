// codemojex feed: the operator's status page, refreshed from /api/status.
(function () {
  'use strict';

  var root = document.getElementById('status');
  if (!root) return;
  var body = document.getElementById('streams');
  var renderers = document.getElementById('renderers');
  var at = document.getElementById('status-at');
  var errEl = document.getElementById('status-err');
  var group = document.getElementById('status-group');
  var notes = document.getElementById('notes');

  // The admin token the page was opened with travels on to the API.
  var token = new URLSearchParams(location.search).get('token');
  var headers = token ? { Authorization: 'Bearer ' + token } : {};

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function dur(ns) {
    if (!ns || ns <= 0) return '–';
    var ms = ns / 1e6;
    if (ms < 1000) return Math.round(ms) + 'ms';
    var s = ms / 1000;
    if (s < 60) return s.toFixed(1) + 's';
    var m = Math.floor(s / 60);
    if (m < 60) return m + 'm' + Math.round(s - m * 60) + 's';
    return Math.floor(m / 60) + 'h' + (m % 60) + 'm';
  }

  function num(td, n) { td.className = 'num'; td.textContent = String(n); return td; }

  function row(s) {
    var tr = el('tr');
    tr.dataset.stream = s.stream;
    if (s.error || s.dead > 0) tr.className = 'bad';
    var name = el('td', '', s.game || s.stream);
    if (s.error) name.appendChild(el('div', 'err', s.error));
    tr.appendChild(name);
    tr.appendChild(num(el('td'), s.length));
    tr.appendChild(num(el('td'), s.lag < 0 ? '?' : s.lag));
    tr.appendChild(num(el('td'), s.pending));
    tr.appendChild(num(el('td'), dur(s.oldest_pending_idle_ns)));
    tr.appendChild(num(el('td'), s.dead));
    var cs = el('td');
    (s.consumers || []).forEach(function (c) {
      cs.appendChild(el('span', c.alive ? 'chip' : 'chip dead', c.name + ' · ' + c.pending + ' · ' + dur(c.idle_ns)));
    });
    tr.appendChild(cs);
    return tr;
  }

  function render(st) {
    group.textContent = st.group || '';
    at.textContent = st.at ? 'at ' + new Date(st.at).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : '';
    notes.replaceChildren.apply(notes, (st.notes || []).map(function (n) {
      return el('li', 'err', new Date(n.at).toISOString().replace('T', ' ').slice(0, 19) + ' · ' + n.text);
    }));
    renderers.replaceChildren.apply(renderers, (st.renderers || []).map(function (r) { return el('span', 'chip', r); }));
    body.replaceChildren.apply(body, (st.streams || []).map(row));
    errEl.hidden = !st.error;
    errEl.textContent = st.error || '';
  }

  function poll() {
    fetch(root.dataset.api, { headers: headers, cache: 'no-store' }).then(function (r) {
      return r.json().catch(function () { throw new Error('status ' + r.status); });
    }).then(function (st) {
      render(st);
      root.dataset.state = 'live';
    }).catch(function (e) {
      errEl.hidden = false;
      errEl.textContent = 'status unavailable: ' + e.message;
      root.dataset.state = 'offline';
    }).then(function () { setTimeout(poll, 2000); });
  }

  poll();
})();
