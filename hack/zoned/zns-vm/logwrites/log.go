package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The on-disk format of device-mapper's log-writes target (the kernel's
// drivers/md/dm-log-writes.c): a super block at the log's start, then one
// entry a logical block, each write's data after its entry.
const (
	logMagic   = 0x6a736677736872
	logVersion = 1

	superSize = 28 // magic, version, nr_entries (le64), sectorsize (le32)
	entrySize = 32 // sector, nr_sectors, flags, data_len (le64)

	FlagFlush    = 1 << 0
	FlagFUA      = 1 << 1
	FlagDiscard  = 1 << 2
	FlagMark     = 1 << 3
	FlagMetadata = 1 << 4
)

// Entry is one logged request: a write of NrSectors blocks at Sector (in
// the log's block size) whose data is at DataOff in the log, a discard of
// them, a flush, or a mark (a name a user put in the log: `dmsetup message
// DEV 0 mark NAME`).
type Entry struct {
	Index     int
	Sector    uint64
	NrSectors uint64
	Flags     uint64
	Mark      string
	DataOff   int64
}

// Durable says whether the device's state after the entry is one a power
// cut may leave: the entry is a flush (or a FUA write), so everything
// completed before it is on the medium.
func (e Entry) Durable() bool { return e.Flags&(FlagFlush|FlagFUA) != 0 }

// Log is a parsed log: its block size and entries.
type Log struct {
	BlockSize int64
	Entries   []Entry
}

// Parse reads the log in r, size bytes long. A log is outside input (a
// device that may hold anything): every count and offset in it is checked
// against size before it is used, so memory is bounded by size and nothing
// points outside the log.
func Parse(r io.ReaderAt, size int64) (*Log, error) {
	var sb [superSize]byte
	if _, err := r.ReadAt(sb[:], 0); err != nil {
		return nil, fmt.Errorf("reading the super block: %w", err)
	}
	if m := binary.LittleEndian.Uint64(sb[0:]); m != logMagic {
		return nil, fmt.Errorf("not a log-writes log: magic %#x", m)
	}
	if v := binary.LittleEndian.Uint64(sb[8:]); v != logVersion {
		return nil, fmt.Errorf("log-writes version %d, want %d", v, logVersion)
	}
	n := binary.LittleEndian.Uint64(sb[16:])
	bs := int64(binary.LittleEndian.Uint32(sb[24:]))
	switch bs {
	case 512, 1024, 2048, 4096:
	default:
		return nil, fmt.Errorf("block size %d is not one of 512, 1024, 2048, 4096", bs)
	}
	// Each entry takes a block of the log at least, after the super block's.
	if size < bs || n > uint64(size/bs-1) {
		return nil, fmt.Errorf("%d entries do not fit in a log of %d bytes", n, size)
	}
	l := &Log{BlockSize: bs}
	pos := bs
	buf := make([]byte, bs)
	for i := 0; i < int(n); i++ {
		if pos > size-bs {
			return nil, fmt.Errorf("entry %d: at %d, past the log's end", i, pos)
		}
		if _, err := r.ReadAt(buf, pos); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		e := Entry{
			Index:     i,
			Sector:    binary.LittleEndian.Uint64(buf[0:]),
			NrSectors: binary.LittleEndian.Uint64(buf[8:]),
			Flags:     binary.LittleEndian.Uint64(buf[16:]),
		}
		dataLen := binary.LittleEndian.Uint64(buf[24:])
		pos += bs
		switch {
		case e.Flags&FlagMark != 0:
			if dataLen > uint64(bs-entrySize) {
				return nil, fmt.Errorf("entry %d: a mark of %d bytes", i, dataLen)
			}
			e.Mark = string(buf[entrySize : entrySize+int(dataLen)])
		case dataLen != 0:
			return nil, fmt.Errorf("entry %d: inline data of %d bytes in an entry that is not a mark", i, dataLen)
		case e.Flags&FlagDiscard != 0:
		default:
			if e.NrSectors > uint64((size-pos)/bs) {
				return nil, fmt.Errorf("entry %d: %d blocks of data at %d, past the log's end", i, e.NrSectors, pos)
			}
			e.DataOff = pos
			pos += int64(e.NrSectors) * bs
		}
		l.Entries = append(l.Entries, e)
	}
	return l, nil
}

// Replay applies entries [from, to) of the log in r to dev, devSize bytes
// long: each write's data at its place, zeros where a discard was.
func (l *Log) Replay(r io.ReaderAt, dev io.WriterAt, devSize int64, from, to int) error {
	if from < 0 || to > len(l.Entries) || from > to {
		return fmt.Errorf("entries %d to %d: the log has %d", from, to, len(l.Entries))
	}
	buf := make([]byte, 1<<20)
	for _, e := range l.Entries[from:to] {
		if e.Flags&FlagMark != 0 || e.NrSectors == 0 {
			continue
		}
		if e.Sector > uint64(devSize/l.BlockSize) || e.NrSectors > uint64(devSize/l.BlockSize)-e.Sector {
			return fmt.Errorf("entry %d: blocks %d+%d are past the device's end (%d bytes)", e.Index, e.Sector, e.NrSectors, devSize)
		}
		off, left := int64(e.Sector)*l.BlockSize, int64(e.NrSectors)*l.BlockSize
		src := e.DataOff
		for left > 0 {
			chunk := buf[:min(left, int64(len(buf)))]
			if e.Flags&FlagDiscard != 0 {
				clear(chunk)
			} else if _, err := r.ReadAt(chunk, src); err != nil {
				return fmt.Errorf("entry %d: reading its data: %w", e.Index, err)
			}
			if _, err := dev.WriteAt(chunk, off); err != nil {
				return fmt.Errorf("entry %d: %w", e.Index, err)
			}
			off, src, left = off+int64(len(chunk)), src+int64(len(chunk)), left-int64(len(chunk))
		}
	}
	return nil
}

var errUsage = errors.New("usage: logwrites list LOG | logwrites replay LOG DEV FROM TO")
