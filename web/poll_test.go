package web_test

import (
	"testing"

	"github.com/codemojex/feed/web"
)

// The websocket guarantees hold on the nbio engine too: the tests that
// state them run again with Config.WSEngine "nbio" (MustOpenEnv reads
// CODEMOJEX_WS_ENGINE). The whole package runs on it with
// CODEMOJEX_WS_ENGINE=nbio (make test-nbio).
func TestNbioEngine(t *testing.T) {
	t.Setenv("CODEMOJEX_WS_ENGINE", web.WSEngineNbio)
	tests := []struct {
		name string
		run  func(*testing.T)
	}{
		// resume and order
		{"BackfillThenLive", TestLiveBackfillThenLive},
		{"ResumeFromCursorNoDuplicates", TestLiveResumeFromCursorNoDuplicates},
		{"NoGapWhileWriting", TestLiveNoGapWhileWriting},
		{"SubscribeBackfillWindow", TestLiveSubscribeBackfillWindow},
		{"HandoffNoGapNoDuplicate", TestHandoffNoGapNoDuplicate},
		{"Reset", TestLiveReset},
		{"ResetOtherStore", TestLiveResetOtherStore},
		// slow clients
		{"SlowClient", TestLiveSlowClient},
		{"StuckWriteIsSlow", TestLiveStuckWriteIsSlow},
		// Origin, limits, liveness, shutdown
		{"WebsocketOrigin", TestWebsocketOrigin},
		{"SocketCapPerAddress", TestSocketCapPerAddress},
		{"GlobalCapExact", TestGlobalCapExact},
		{"Pings", TestLivePings},
		{"CloseSendsGoingAway", TestCloseSendsGoingAway},
		{"StoreFailure", TestStoreFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}
