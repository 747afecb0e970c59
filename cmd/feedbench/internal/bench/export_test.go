package bench

// StartRendererAt is StartRenderer on the given address, for a test that
// holds that address itself.
func StartRendererAt(bin string, args RendererArgs, addr string) (*Renderer, error) {
	if args.Group == "" {
		args.Group = "feed"
	}
	r := &Renderer{Args: args, bin: bin, Addr: addr}
	return r, r.Start()
}

// AuditDeliveries is auditDeliveries, for the tests of the audit itself.
var AuditDeliveries = auditDeliveries

// MarkSent records id as written to the game of index game in the
// measured window, as a write through Redis would.
func (w *Writer) MarkSent(id string, game int) {
	w.mu.Lock()
	w.sent[id] = sentRec{game: game}
	w.mu.Unlock()
}
