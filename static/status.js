// codemojex feed: the operator's status page. The server renders the tables
// (templates/status.templ); this script swaps in the same fragment from
// /fragments/status every few seconds.
(function () {
  'use strict';

  var root = document.getElementById('status');
  var body = document.getElementById('status-body');
  var off = document.getElementById('status-offline');
  if (!root || !body || !off) return;

  // The admin token the page was opened with travels on to the fragment.
  var token = new URLSearchParams(location.search).get('token');
  var init = token ? { headers: { Authorization: 'Bearer ' + token } } : null;

  window.feed.pollFragment(root, root.dataset.fragment, 2000, init, function (html) {
    body.innerHTML = html;
    off.hidden = true;
  }, function (e) {
    off.textContent = 'status unavailable: ' + e.message;
    off.hidden = false;
  });
})();
