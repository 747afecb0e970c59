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

  window.feed = { parse: parse, pollFragment: pollFragment };
})();
