// codemojex feed: replay a stored game at 1×–50× with play/pause and a
// position slider. The timeline (EVT id order, oldest first) comes from
// /games/{game}/timeline.json.
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

  // A gap of writer time longer than this is shortened: a stalled game must
  // not stall the replay.
  var maxGap = 5000;

  var parse = window.feed.parse; // common.js

  function show(n) {
    n = Math.max(0, Math.min(entries.length, n));
    while (shown < n) {
      var li = parse(entries[shown].html);
      if (li) list.insertBefore(li, list.firstChild);
      else list.insertBefore(document.createElement('li'), list.firstChild);
      shown++;
    }
    while (shown > n) {
      if (list.firstChild) list.removeChild(list.firstChild);
      shown--;
    }
    pos.value = String(shown);
    posText.textContent = shown + ' / ' + entries.length;
    root.dataset.pos = String(shown);
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
    timer = setTimeout(step, delay());
  }

  function setPlaying(on) {
    playing = on;
    play.dataset.state = on ? 'playing' : 'paused';
    play.textContent = on ? '❚❚ pause' : '▶ play';
    if (timer) { clearTimeout(timer); timer = 0; }
    if (on) {
      if (shown >= entries.length) show(0);
      timer = setTimeout(step, delay());
    }
  }

  play.addEventListener('click', function () { setPlaying(!playing); });
  pos.addEventListener('input', function () { show(Number(pos.value) || 0); });
  speed.addEventListener('change', function () { if (playing) setPlaying(true); });

  fetch(root.dataset.timeline, { cache: 'no-store' }).then(function (r) {
    if (!r.ok) throw new Error('status ' + r.status);
    return r.json();
  }).then(function (data) {
    entries = Array.isArray(data) ? data : [];
    pos.max = String(entries.length);
    pos.disabled = false;
    play.disabled = entries.length === 0;
    root.dataset.state = 'ready';
    show(0);
  }).catch(function (e) {
    root.dataset.state = 'error';
    posText.textContent = 'could not load the timeline (' + e.message + ')';
  });
})();
