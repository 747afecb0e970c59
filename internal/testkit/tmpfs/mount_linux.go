package tmpfs

import "syscall"

const supported = true

func mount(dir, size string) error {
	return syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size)
}

func resize(dir, size string) error {
	return syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size="+size)
}

func unmount(dir string, detach bool) error {
	flags := 0
	if detach {
		flags = syscall.MNT_DETACH
	}
	return syscall.Unmount(dir, flags)
}
