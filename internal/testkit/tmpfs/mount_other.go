//go:build !linux

package tmpfs

const supported = false

func mount(dir, size string) error          { return ErrUnsupported }
func resize(dir, size string) error         { return ErrUnsupported }
func unmount(dir string, detach bool) error { return ErrUnsupported }
