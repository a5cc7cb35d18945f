package main

import (
	"fmt"

	"github.com/moby/moby/v2/daemon/internal/zoned"
)

// device is the zoned device every placement writes to: the daemon's model
// (zoned.Model, keeping no data), with the rules a real device enforces, and
// what the replay reads of it. It passes every operation to the model and,
// for the operations the model accepted, follows each zone's write pointer
// and condition, counts the bytes the host wrote and the bytes a collector
// relocated, and notes the containers whose data each zone holds since its
// last reset. A placement that breaks a rule of the device gets the model's
// error, and the replay stops with it: a replay doubles as a check of the
// placement.
type device struct {
	m      *zoned.Model
	geo    zoned.Geometry
	cap    int64 // every zone's capacity
	wp     []int64
	cond   []zoned.Cond
	owners []map[string]bool

	// Who the next writes are for: the container, and whether they are a
	// collector's relocations.
	writer string
	gc     bool

	hostBytes, relocatedBytes int64
	zero                      []byte

	clk *clock // the time model (timing.go); nil: none

	nEmpty int // zones whose condition is empty
}

// setCond sets zone i's condition, and the count of empty zones with it.
func (d *device) setCond(i int, c zoned.Cond) {
	if d.cond[i] == zoned.CondEmpty {
		d.nEmpty--
	}
	if c == zoned.CondEmpty {
		d.nEmpty++
	}
	d.cond[i] = c
}

func newDevice(g geometry) *device {
	geo := g.zoned()
	d := &device{
		m:      zoned.NewDiscardModel(geo, g.ZoneCapacity),
		geo:    geo,
		cap:    g.ZoneCapacity,
		wp:     make([]int64, g.Zones),
		cond:   make([]zoned.Cond, g.Zones),
		owners: make([]map[string]bool, g.Zones),
		zero:   make([]byte, 4<<20),
		nEmpty: g.Zones,
	}
	for i := range d.cond {
		d.cond[i] = zoned.CondEmpty
		d.owners[i] = map[string]bool{}
	}
	return d
}

// The zoned.Device interface, for the daemon's placement.

func (d *device) Geometry() zoned.Geometry                { return d.geo }
func (d *device) Identity() string                        { return "" }
func (d *device) Sync() error                             { return d.m.Sync() }
func (d *device) Close() error                            { return d.m.Close() }
func (d *device) ReportZones() ([]zoned.Zone, error)      { return d.m.ReportZones() }
func (d *device) ReadAt(p []byte, off int64) (int, error) { return d.m.ReadAt(p, off) }

func (d *device) WriteAt(p []byte, off int64) (int, error) {
	n, err := d.m.WriteAt(p, off)
	if err != nil {
		return n, err
	}
	i := int(off / d.geo.ZoneSize)
	d.wp[i] += int64(n)
	if d.cond[i] != zoned.CondExpOpen {
		d.setCond(i, zoned.CondImpOpen)
	}
	if d.wp[i] == d.cap {
		d.setCond(i, zoned.CondFull)
	}
	d.owners[i][d.writer] = true
	d.clk.write(i, int64(n))
	if d.gc {
		d.relocatedBytes += int64(n)
	} else {
		d.hostBytes += int64(n)
	}
	return n, nil
}

func (d *device) OpenZone(i int) error {
	if err := d.m.OpenZone(i); err != nil {
		return err
	}
	d.setCond(i, zoned.CondExpOpen)
	return nil
}

func (d *device) CloseZone(i int) error {
	if err := d.m.CloseZone(i); err != nil {
		return err
	}
	if d.cond[i] == zoned.CondImpOpen || d.cond[i] == zoned.CondExpOpen {
		d.setCond(i, zoned.CondClosed)
		if d.wp[i] == 0 {
			d.setCond(i, zoned.CondEmpty)
		}
	}
	return nil
}

func (d *device) FinishZone(i int) error {
	if err := d.m.FinishZone(i); err != nil {
		return err
	}
	d.clk.finish(i)
	d.setCond(i, zoned.CondFull)
	return nil
}

func (d *device) ResetZone(i int) error {
	if err := d.m.ResetZone(i); err != nil {
		return err
	}
	d.clk.reset(i)
	d.setCond(i, zoned.CondEmpty)
	d.wp[i] = 0
	clear(d.owners[i])
	return nil
}

// For the baselines, which write zeros of a length.

// append writes n bytes at zone i's write pointer and returns their offset
// in the zone.
func (d *device) append(i int, n int64) (int64, error) {
	at := d.wp[i]
	for done := int64(0); done < n; {
		k := min(n-done, int64(len(d.zero)))
		if _, err := d.WriteAt(d.zero[:k], int64(i)*d.geo.ZoneSize+d.wp[i]); err != nil {
			return at, fmt.Errorf("device: %w", err)
		}
		done += k
	}
	return at, nil
}

func (d *device) state(i int) zoned.Cond { return d.cond[i] }

func (d *device) empty(i int) bool { return d.cond[i] == zoned.CondEmpty }

func (d *device) full(i int) bool { return d.cond[i] == zoned.CondFull }

// emptyZones are the empty zones, in order.
func (d *device) emptyZones() []int {
	var out []int
	for i, c := range d.cond {
		if c == zoned.CondEmpty {
			out = append(out, i)
		}
	}
	return out
}

func (d *device) countEmpty() int { return d.nEmpty }

// firstEmpty is the lowest empty zone (-1: none).
func (d *device) firstEmpty() int {
	if d.nEmpty == 0 {
		return -1
	}
	for i, c := range d.cond {
		if c == zoned.CondEmpty {
			return i
		}
	}
	return -1
}

// mixed counts the zones holding data of more than one container.
func (d *device) mixed() int {
	n := 0
	for _, o := range d.owners {
		if len(o) > 1 {
			n++
		}
	}
	return n
}
