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
