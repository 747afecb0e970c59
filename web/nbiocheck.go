//go:build nbiocheck

package web

import (
	"log/slog"

	"github.com/lesismal/nbio/mempool"

	"github.com/codemojex/feed/internal/nbiocheck"
)

// Built with the nbiocheck tag (the crash tests' binaries), nbio's buffers
// and every frame a socket or event stream writes are checked, and each misuse is logged:
// the tests fail on the line.
func init() {
	nbioAllocator = nbiocheck.New(mempool.DefaultMemPool, func(misuse string) {
		slog.Error(nbiocheck.LogMessage, "misuse", misuse)
	})
	newWireCheck = func(game string, deflate bool) func([]byte) {
		return nbiocheck.NewFrames(func(misuse string) {
			slog.Error(nbiocheck.LogMessage, "game", game, "misuse", misuse)
		}, deflate).Write
	}
	newStreamCheck = func(game string) func([]byte) {
		return nbiocheck.NewEvents(func(misuse string) {
			slog.Error(nbiocheck.LogMessage, "game", game, "misuse", misuse)
		}).Write
	}
}
