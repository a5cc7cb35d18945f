// Command logwrites reads the log of device-mapper's log-writes target and
// replays it onto a device, to see a file system as a power cut at any
// flush would have left it.
//
//	logwrites list LOG
//	    one line an entry: its index, its flags (FLUSH, FUA, DISCARD, MARK,
//	    METADATA or -), its first block, its blocks, its mark's name (or -)
//	logwrites replay LOG DEV FROM TO
//	    writes entries FROM to TO-1 to DEV (the device the log was taken
//	    of, as it was when the log began: zeroed, for instance)
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "logwrites:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) < 2 {
		return errUsage
	}
	f, size, err := openSized(args[1], os.O_RDONLY)
	if err != nil {
		return err
	}
	defer f.Close()
	l, err := Parse(f, size)
	if err != nil {
		return fmt.Errorf("%s: %w", args[1], err)
	}
	switch {
	case args[0] == "list" && len(args) == 2:
		w := bufio.NewWriter(stdout)
		for _, e := range l.Entries {
			mark := e.Mark
			if mark == "" {
				mark = "-"
			}
			fmt.Fprintf(w, "%d %s %d %d %s\n", e.Index, flagNames(e.Flags), e.Sector, e.NrSectors, strings.Join(strings.Fields(mark), "_"))
		}
		return w.Flush()
	case args[0] == "replay" && len(args) == 5:
		from, err1 := strconv.Atoi(args[3])
		to, err2 := strconv.Atoi(args[4])
		if err1 != nil || err2 != nil {
			return errUsage
		}
		dev, devSize, err := openSized(args[2], os.O_WRONLY)
		if err != nil {
			return err
		}
		if err := l.Replay(f, dev, devSize, from, to); err != nil {
			dev.Close()
			return err
		}
		if err := dev.Sync(); err != nil {
			dev.Close()
			return err
		}
		return dev.Close()
	}
	return errUsage
}

// openSized opens a file or a block device and returns its size.
func openSized(path string, flag int) (*os.File, int64, error) {
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, 0, err
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

func flagNames(flags uint64) string {
	var names []string
	for _, f := range []struct {
		bit  uint64
		name string
	}{{FlagFlush, "FLUSH"}, {FlagFUA, "FUA"}, {FlagDiscard, "DISCARD"}, {FlagMark, "MARK"}, {FlagMetadata, "METADATA"}} {
		if flags&f.bit != 0 {
			names = append(names, f.name)
		}
	}
	if rest := flags &^ (FlagFlush | FlagFUA | FlagDiscard | FlagMark | FlagMetadata); rest != 0 {
		names = append(names, fmt.Sprintf("%#x", rest))
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}
