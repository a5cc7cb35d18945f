package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/v2/daemon/internal/zoned"
)

// zonePack is the daemon's placement (zoned.Placer), driven as the daemon's
// store drives it: a stream per image, planned from its size when it
// begins, written in chunks, committed, and dropped when deleted. The
// replay's clock is the trace's.
type zonePack struct {
	*base
	p       *zoned.Placer
	zero    []byte
	reserve int
}

func newZonePack(g geometry, pp params) (*zonePack, error) {
	chunk := pp.Chunk
	b := newBase(g)
	zones, err := b.dev.ReportZones()
	if err != nil {
		return nil, err
	}
	return &zonePack{base: b, p: zoned.NewPlacer(b.dev, zones), zero: make([]byte, chunk), reserve: pp.GCReserve}, nil
}

// at is trace time as a clock.
func at(t float64) time.Time { return time.Unix(0, 0).Add(time.Duration(t * float64(time.Second))) }

func (z *zonePack) streams() int       { return z.p.Streams() }
func (z *zonePack) admitOnStart() bool { return true }

// admit plans im's stream; when it does not fit, it relocates the live
// data of the zones the placement picks, one at a time, as the daemon's
// store does, and tries again; with no zone left to pick, it plans the
// stream in the empty zone kept for relocations too.
func (z *zonePack) admit(im *image) (string, error) {
	if why := overReserve(z.base, im, z.reserve); why != "" {
		return why, nil
	}
	for tries := 0; ; tries++ {
		s, err := z.p.Begin(im.container, im.padded, at(im.created))
		if err == nil {
			im.stream = s
			return "", nil
		}
		if !errors.Is(err, zoned.ErrNoSpace) {
			return "", err
		}
		v := -1
		if tries < z.g.Zones {
			v = z.p.Victim(nil)
		}
		if v < 0 {
			// Nothing left to relocate: the empty zone kept for
			// relocations too, as the store does.
			s, err = z.p.BeginWithSpare(im.container, im.padded, at(im.created))
			if err == nil {
				im.stream = s
				return "", nil
			}
			if !errors.Is(err, zoned.ErrNoSpace) {
				return "", err
			}
			return "device full: " + strings.TrimPrefix(err.Error(), zoned.ErrNoSpace.Error()+": "), nil
		}
		err = z.relocate(v)
		z.p.Undrain(v)
		if err != nil {
			return "", err
		}
	}
}

// relocate moves the live data of zone v elsewhere, extent by extent, and
// lets the placement reset it.
func (z *zonePack) relocate(v int) error {
	z.gcRuns++
	z.dev.clk.relocating(true)
	defer z.dev.clk.relocating(false)
	var old []zoned.Extent
	for _, x := range z.heldInOrder(v) {
		im := x.im
		s, err := z.p.Relocate(im.container, at(im.created), x.length, at(z.now))
		if err != nil {
			return fmt.Errorf("relocating zone %d: %w", v, err)
		}
		z.dev.writer, z.dev.gc = im.container, true
		z.dev.clk.read(x.length)
		for left := x.length; left > 0; {
			n := min(left, int64(len(z.zero)))
			k, err := z.p.TryWrite(s, z.zero[:n], nil)
			if err != nil {
				return fmt.Errorf("relocating zone %d: %w", v, err)
			}
			left -= int64(k)
		}
		if err := z.p.Commit(s); err != nil {
			return err
		}
		old = append(old, zoned.Extent{Zone: v, Offset: int64(v)*z.g.ZoneSize + x.off, Length: x.length})
		z.moved(im, x, s.Extents())
	}
	z.dev.gc = false
	return z.p.Release(old)
}

func (z *zonePack) ready(im *image) bool { return z.p.Ready(im.stream) }

func (z *zonePack) put(im *image, n int64) (int64, error) {
	if int64(len(z.zero)) < n {
		z.zero = make([]byte, n)
	}
	z.dev.writer, z.dev.gc = im.container, false
	k, err := z.p.TryWrite(im.stream, z.zero[:n], nil)
	z.sync(im)
	if errors.Is(err, zoned.ErrNoSpace) {
		return int64(k), reasonError("device full: " + strings.TrimPrefix(err.Error(), zoned.ErrNoSpace.Error()+": "))
	}
	if errors.Is(err, zoned.ErrBusy) {
		return int64(k), nil
	}
	return int64(k), err
}

// sync records the bytes the stream wrote since the last sync.
func (z *zonePack) sync(im *image) {
	ext := im.stream.Extents()
	var have int64
	for _, x := range im.extents {
		have += x.length
	}
	var seen int64
	for _, x := range ext {
		if seen+x.Length > have {
			from := max(have-seen, 0)
			z.record(im, x.Zone, x.Offset-int64(x.Zone)*z.g.ZoneSize+from, x.Length-from)
			have = seen + x.Length
		}
		seen += x.Length
	}
}

func (z *zonePack) complete(im *image) error { return z.p.Commit(im.stream) }

func (z *zonePack) drop(im *image) error {
	var ext []zoned.Extent
	for _, x := range im.extents {
		ext = append(ext, zoned.Extent{Zone: x.zone, Offset: int64(x.zone)*z.g.ZoneSize + x.off, Length: x.length})
	}
	z.dropExtents(im)
	if im.remaining > 0 { // a create that failed
		return z.p.Abort(im.stream)
	}
	return z.p.Drop(im.container, at(im.created), at(z.now), ext)
}

func (z *zonePack) deleted(im *image) error { return nil }
