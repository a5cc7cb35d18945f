//go:build linux && amd64

package main

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

const (
	iffTun  = 0x0001
	iffNoPI = 0x1000
)

// openTun creates (or attaches to) the TUN device name inside the network
// namespace at nsPath ("" = this one) and returns its file descriptor.
func openTun(nsPath, name string) (int, error) {
	if len(name) >= syscall.IFNAMSIZ {
		return -1, fmt.Errorf("device name %q is longer than %d bytes", name, syscall.IFNAMSIZ-1)
	}
	if nsPath != "" {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			return -1, err
		}
		defer self.Close()
		target, err := os.Open(nsPath)
		if err != nil {
			return -1, fmt.Errorf("network namespace: %w", err)
		}
		defer target.Close()
		if err := setns(int(target.Fd())); err != nil {
			return -1, fmt.Errorf("setns %s: %w", nsPath, err)
		}
		defer func() {
			if err := setns(int(self.Fd())); err != nil {
				panic("linkemu: cannot return to the original network namespace: " + err.Error())
			}
		}()
	}
	fd, err := syscall.Open("/dev/net/tun", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	var ifr [40]byte
	copy(ifr[:], name)
	*(*uint16)(unsafe.Pointer(&ifr[syscall.IFNAMSIZ])) = iffTun | iffNoPI
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TUNSETIFF, uintptr(unsafe.Pointer(&ifr[0]))); errno != 0 {
		syscall.Close(fd)
		return -1, fmt.Errorf("TUNSETIFF %s: %w", name, errno)
	}
	return fd, nil
}

func setns(fd int) error {
	if _, _, errno := syscall.RawSyscall(sysSetns, uintptr(fd), syscall.CLONE_NEWNET, 0); errno != 0 {
		return errno
	}
	return nil
}

// sysSetns is setns(2) on amd64; the syscall package does not name it.
const sysSetns = 308
