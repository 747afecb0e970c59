package web_test

import (
	"testing"

	"github.com/codemojex/feed/web"
)

// The websocket guarantees hold on both engines: the package's tests run on
// the default (nbio), and those that state the guarantees run again here
// with Config.WSEngine "std" (MustOpenEnv reads CODEMOJEX_WS_ENGINE). The
// whole package runs on std with CODEMOJEX_WS_ENGINE=std (make test-std).
func TestStdEngine(t *testing.T) {
	t.Setenv("CODEMOJEX_WS_ENGINE", web.WSEngineStd)
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
