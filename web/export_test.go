package web

// SetTestHookSubscribed installs f to run between a websocket's hub
// subscription and its backfill, and returns a func that removes it. Set it
// before opening the server.
func SetTestHookSubscribed(f func(game string)) (restore func()) {
	testHookSubscribed = f
	return func() { testHookSubscribed = nil }
}
