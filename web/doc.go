// Package web serves the feed to browsers: the games index, each game's
// live timeline (server-rendered, then a websocket of new lines from a seq
// cursor), a replay page, the operator's status page and metrics. It only
// reads: the store for lines and state, a status function for the consumer
// group. It never writes to Redis.
//
// # Routes
//
//	GET /                                games index (rows refreshed from /fragments/games)
//	GET /games/{game}                    latest lines, newest first, with the seq read in the same transaction
//	GET /games/{game}/older?before=EVT   the next lines below EVT as <li> items; header X-More: true|false
//	GET /games/{game}/live?after=SEQ     websocket (below); optional &store=ID, &last=EVT_ID, &board=1
//	GET /games/{game}/events?after=SEQ   the same frames as a server-sent event stream (events.go), where websockets are blocked
//	GET /games/{game}/replay             replay page; its data is /games/{game}/timeline.json?after=EVT, a page at a time; then ?since=SEQ, what was committed after
//	GET /status, /fragments/status, /api/status, /metrics, /debug/pprof/
//	                                     operators; behind Config.AdminToken (open without one on loopback only)
//	GET /healthz, /readyz                process up; Config.Ready passes (its reason for admins only)
//	GET /static/NAME.HASH.EXT            embedded assets, cached for a year
//
// An invalid game name answers 404 on every game route. A game the store
// has no line of answers 404 on ?before=, /older, /replay and every form
// of timeline.json; its game page is served, and waits for its first line.
//
// # Limits
//
// Plain requests: a write deadline of Config.ResponseTimeout per response
// and at most Config.MaxRequestsPerClient in flight per client. Websockets
// and event streams, counted together: an upgrade rate per client, at most Config.MaxSocketsPerClient open per
// client and Config.MaxClients in all, both taken before the handshake and
// given back at close. A client is its address (IPv6: its /64), read from
// X-Forwarded-For only when the peer is in Config.TrustedProxies.
// Websocket, event stream and admin requests must name one of
// Config.PublicHosts in Host. A websocket handshake's or an event stream's
// request body is read before the switch or the stream's head, within
// Config.ReadTimeout and up to 4 KiB (413 beyond it, 400 when it does not
// come in time).
//
// # Websocket
//
// Frames are JSON text: {"t":"line","seq":N,"id":"evt_…","html":"<li …>…</li>"},
// {"t":"state","html":"<aside id=\"scoreboard\" …>"},
// {"t":"board","html":"<aside id=\"scoreboard\" …>"}, {"t":"watching","n":N},
// {"t":"probe"} (the answer to a page's probe, the one message a page may
// send) and {"t":"reset"} (docs/contracts.md). On
// connect the server subscribes the socket to its game's hub first, then
// sends a state frame and every line with seq > after (in seq order, from the
// store), then live lines and scoreboard panels (coalesced: at most one per
// game per Config.StateEvery, none when the panel did not change). A panel
// goes out as a board frame, its unchanged rows stubbed, when every client
// of the hub asked for them (board=1) and shows the last one (boards.go),
// else whole. Live lines
// come from the tailer, which reads the store after a doorbell or its tick,
// and takes the lines this process committed from Server.Committed without a
// store read when their seqs follow its cursor (on the committing goroutine
// when the tailer is between passes). Live lines at or below the last backfilled seq are
// dropped, so the window between the backfill query and the subscription
// loses nothing and doubles nothing.
//
// Reset: a store=ID other than Config.StoreID, an after above every seq
// the store ever gave (Store.HighSeq), a last=EVT_ID that is not the store's line of the game with the
// greatest seq at or below after (the store renumbered under its ID: a
// backup restored), or more than Config.MaxBacklog lines to catch up gets a
// reset frame and a normal close; the page reloads.
//
// Close codes: 1001 going away (server shutting down: reconnect), 1008
// "slow client: resume from your cursor" (its send queue overflowed: the
// hub dropped it without waiting), 1000 after a reset. A socket that does
// not answer pings (every Config.PingEvery) within Config.WriteTimeout is
// dropped.
//
// Engines (Config.WSEngine): "nbio", the default, keeps net/http's
// handshake (routes, limits, Origin check) and then hands the socket to an
// nbio epoll poller, where an idle socket holds no goroutine and no buffer
// (poll.go, pollsocket.go); "std" serves each socket with coder/websocket
// on its own goroutines. The frames, order, resume, close codes and pings
// above are the same on both; on nbio the send queue's bound also counts
// the bytes the kernel has not taken (Config.SendBuffer).
//
// # Page hooks for browser tests
//
// The game page has <section id="game" data-seq data-cursor data-store>,
// <ol id="timeline"> of <li id="evt_…" data-seq data-kind>, newest first,
// <span id="conn" data-state="connecting|live|reconnecting|offline">,
// <aside id="scoreboard"> and <a id="older" data-before>. The replay page
// has #replay[data-state=ready][data-pos], #play, #speed, #pos; the status
// page #status[data-state=live|offline] and #streams; the index
// #index[data-state] and #games. A CSP violation sets
// <html data-csp="violated: …">.
package web
