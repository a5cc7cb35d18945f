package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"
)

// logEntry is what a test log holds: a write of data at sector, a discard,
// a flush, or a mark.
type logEntry struct {
	sector  uint64
	flags   uint64
	data    []byte // a write's, a multiple of the block size
	discard uint64 // a discard's blocks
	mark    string
}

// encode writes a log as the kernel does, in blocks of bs bytes.
func encode(bs int, entries []logEntry) []byte {
	var b bytes.Buffer
	super := make([]byte, bs)
	binary.LittleEndian.PutUint64(super[0:], logMagic)
	binary.LittleEndian.PutUint64(super[8:], logVersion)
	binary.LittleEndian.PutUint64(super[16:], uint64(len(entries)))
	binary.LittleEndian.PutUint32(super[24:], uint32(bs))
	b.Write(super)
	for _, e := range entries {
		h := make([]byte, bs)
		binary.LittleEndian.PutUint64(h[0:], e.sector)
		n := uint64(len(e.data) / bs)
		if e.flags&FlagDiscard != 0 {
			n = e.discard
		}
		binary.LittleEndian.PutUint64(h[8:], n)
		binary.LittleEndian.PutUint64(h[16:], e.flags)
		if e.mark != "" {
			binary.LittleEndian.PutUint64(h[24:], uint64(len(e.mark)))
			copy(h[entrySize:], e.mark)
		}
		b.Write(h)
		b.Write(e.data)
	}
	return b.Bytes()
}

type device []byte

func (d device) WriteAt(p []byte, off int64) (int, error) { return copy(d[off:], p), nil }

func testLog(bs int) []byte {
	return encode(bs, []logEntry{
		{sector: 2, data: bytes.Repeat([]byte("a"), 2*bs)},
		{flags: FlagFlush},
		{flags: FlagMark, mark: "created"},
		{sector: 3, flags: FlagDiscard, discard: 2},
		{sector: 0, flags: FlagFUA | FlagMetadata, data: bytes.Repeat([]byte("b"), bs)},
	})
}

func TestParseAndReplay(t *testing.T) {
	for _, bs := range []int{512, 4096} {
		raw := testLog(bs)
		l, err := Parse(bytes.NewReader(raw), int64(len(raw)))
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Entries) != 5 || l.BlockSize != int64(bs) {
			t.Fatalf("bs %d: %d entries of %d bytes", bs, len(l.Entries), l.BlockSize)
		}
		if l.Entries[2].Mark != "created" || !l.Entries[1].Durable() || l.Entries[0].Durable() || !l.Entries[4].Durable() {
			t.Fatalf("bs %d: entries %+v", bs, l.Entries)
		}
		// to the flush: the write alone
		dev := device(bytes.Repeat([]byte("."), 6*bs))
		if err := l.Replay(bytes.NewReader(raw), dev, int64(len(dev)), 0, 2); err != nil {
			t.Fatal(err)
		}
		want := strings.Repeat(".", 2*bs) + strings.Repeat("a", 2*bs) + strings.Repeat(".", 2*bs)
		if string(dev) != want {
			t.Fatalf("bs %d: after the flush: %q", bs, dev)
		}
		// the rest: the discard zeroes blocks 3 and 4, then block 0 is written
		if err := l.Replay(bytes.NewReader(raw), dev, int64(len(dev)), 2, 5); err != nil {
			t.Fatal(err)
		}
		want = strings.Repeat("b", bs) + strings.Repeat(".", bs) + strings.Repeat("a", bs) + strings.Repeat("\x00", 2*bs) + strings.Repeat(".", bs)
		if string(dev) != want {
			t.Fatalf("bs %d: at the end: %q", bs, dev)
		}
		// a device too small for the log's writes
		small := device(make([]byte, 3*bs))
		if err := l.Replay(bytes.NewReader(raw), small, int64(len(small)), 0, 1); err == nil || !strings.Contains(err.Error(), "past the device's end") {
			t.Fatalf("bs %d: replay onto a small device: %v", bs, err)
		}
	}
}

func TestParseRefusesLies(t *testing.T) {
	good := testLog(512)
	for name, mutate := range map[string]func([]byte) []byte{
		"magic":       func(b []byte) []byte { b[0] ^= 1; return b },
		"version":     func(b []byte) []byte { b[8] = 2; return b },
		"block size":  func(b []byte) []byte { binary.LittleEndian.PutUint32(b[24:], 100); return b },
		"entries":     func(b []byte) []byte { binary.LittleEndian.PutUint64(b[16:], 1<<40); return b },
		"truncated":   func(b []byte) []byte { return b[:len(b)-512] },
		"data length": func(b []byte) []byte { binary.LittleEndian.PutUint64(b[512+8:], 1<<50); return b },
		"mark length": func(b []byte) []byte { binary.LittleEndian.PutUint64(b[512*5+24:], 600); return b },
		"inline data": func(b []byte) []byte { binary.LittleEndian.PutUint64(b[512+24:], 8); return b },
	} {
		b := mutate(bytes.Clone(good))
		if _, err := Parse(bytes.NewReader(b), int64(len(b))); err == nil {
			t.Errorf("%s: a log that lies was parsed", name)
		}
	}
}

func TestList(t *testing.T) {
	raw := testLog(512)
	dir := t.TempDir()
	p := dir + "/log"
	if err := writeFile(p, raw); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{"list", p}, &out); err != nil {
		t.Fatal(err)
	}
	want := "0 - 2 2 -\n1 FLUSH 0 0 -\n2 MARK 0 0 created\n3 DISCARD 3 2 -\n4 FUA,METADATA 0 1 -\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	if err := run([]string{"replay", p}, &out); err != errUsage {
		t.Fatalf("replay without a device: %v", err)
	}
}

// A log is a device's contents: whatever it holds, Parse ends in an error
// or in entries whose data lies inside the log, and no more of them than
// the log has blocks.
func FuzzParse(f *testing.F) {
	f.Add(testLog(512))
	f.Add(testLog(4096))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := Parse(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		if int64(len(l.Entries)) > int64(len(b))/l.BlockSize {
			t.Fatalf("%d entries from %d bytes", len(l.Entries), len(b))
		}
		for _, e := range l.Entries {
			if e.DataOff != 0 && e.DataOff+int64(e.NrSectors)*l.BlockSize > int64(len(b)) {
				t.Fatalf("entry %d: data past the log's end", e.Index)
			}
		}
		dev := device(make([]byte, 64<<10))
		_ = l.Replay(bytes.NewReader(b), dev, int64(len(dev)), 0, len(l.Entries))
	})
}

func writeFile(p string, b []byte) error { return os.WriteFile(p, b, 0o600) }
