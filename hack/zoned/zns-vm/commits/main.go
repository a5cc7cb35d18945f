// Command commits is a neighbour on a disk making database-style commits:
// 4 KiB written at the next offset of a file of its own (64 MiB, allocated
// first, gone through in order and again), each followed by fdatasync, one
// at a time, until SIGTERM or SIGINT. It then removes the file and prints
// each commit as "start latency" (Unix nanoseconds, nanoseconds).
//
// usage: commits FILE
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	unit     = 4 << 10
	fileSize = 64 << 20
)

type commit struct{ start, lat int64 }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: commits FILE")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "commits:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	var stop atomic.Bool
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; stop.Store(true) }()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, fileSize); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	buf := make([]byte, unit)
	commits := make([]commit, 0, 1<<16)
	var off int64
	for !stop.Load() {
		buf[0]++
		t0 := time.Now()
		if _, err := f.WriteAt(buf, off); err != nil {
			return err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return err
		}
		commits = append(commits, commit{t0.UnixNano(), int64(time.Since(t0))})
		off = (off + unit) % fileSize
	}
	w := bufio.NewWriter(os.Stdout)
	for _, c := range commits {
		fmt.Fprintf(w, "%d %d\n", c.start, c.lat)
	}
	return w.Flush()
}
