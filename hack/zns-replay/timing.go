package main

import (
	"fmt"
	"math"
	"slices"
)

// costs are the times of the device's operations: the time model of the
// replay. With WriteBW 0 there is none, and no latency is reported.
//
// The model (clock): every zone appends at ZoneBW and the device at
// WriteBW, all zones together, so that zones written at once run in
// parallel until their sum reaches the device's bandwidth (the parallelism
// of active zones); the collector reads what it relocates at ReadBW, from
// the same device; a zone reset takes ResetS and a finish FinishS, with the
// device busy meanwhile. Every writer (a create being written, a delete)
// has a clock of its own that starts when it arrives (or when a stream slot
// frees, for a policy that writes only so many images at once) and waits
// for the device: its operations are served in the order the replay issues
// them (first come, first served on the zone and on the device). A
// relocation runs on the clock of the create that needed it: the time it
// takes is that create's stall, and part of its latency; it holds the
// device for the other writers too.
type costs struct {
	WriteBW float64 `json:"write_bw"` // bytes/s the device appends, all zones together (0: no time model)
	ZoneBW  float64 `json:"zone_bw"`  // bytes/s one zone appends
	ReadBW  float64 `json:"read_bw"`  // bytes/s the device reads
	ResetS  float64 `json:"reset_s"`  // seconds a zone reset takes
	FinishS float64 `json:"finish_s"` // seconds a zone finish takes
}

func (c costs) on() bool { return c.WriteBW > 0 }

// withDefaults fills what c leaves out: a zone as fast as the device,
// reads as fast as writes.
func (c costs) withDefaults() costs {
	if c.on() {
		if c.ZoneBW == 0 {
			c.ZoneBW = c.WriteBW
		}
		if c.ReadBW == 0 {
			c.ReadBW = c.WriteBW
		}
	}
	return c
}

// problems says why c is no time model.
func (c costs) problems() []string {
	var out []string
	for _, f := range []struct {
		name string
		v    float64
	}{{"write-bw", c.WriteBW}, {"zone-bw", c.ZoneBW}, {"read-bw", c.ReadBW}, {"reset-time", c.ResetS}, {"finish-time", c.FinishS}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			out = append(out, fmt.Sprintf("%s: want a finite value >= 0, got %g", f.name, f.v))
		}
	}
	if len(out) > 0 {
		return out
	}
	if !c.on() && (c.ZoneBW > 0 || c.ReadBW > 0 || c.ResetS > 0 || c.FinishS > 0) {
		out = append(out, "write-bw: the time model's other costs need the device's bandwidth (write-bw > 0)")
	}
	if c.on() && c.ZoneBW > c.WriteBW {
		out = append(out, fmt.Sprintf("zone-bw: a zone (%g B/s) cannot append faster than the device (write-bw %g B/s)", c.ZoneBW, c.WriteBW))
	}
	return out
}

// actor is a writer's clock: where it is in time, and how much of that it
// spent on relocation.
type actor struct {
	t, stall float64
}

// clock follows the device's time (costs): when each zone and the device
// are next free, and whose operations the device serves now.
type clock struct {
	c        costs
	zoneFree []float64
	devFree  float64
	cur      *actor
}

func newClock(c costs, zones int) *clock {
	return &clock{c: c.withDefaults(), zoneFree: make([]float64, zones)}
}

// on makes a the writer whose operations the device serves (nil: none).
func (k *clock) on(a *actor) {
	if k != nil {
		k.cur = a
	}
}

// write: n bytes appended to zone z.
func (k *clock) write(z int, n int64) {
	if k == nil || k.cur == nil {
		return
	}
	a := k.cur
	start := max(a.t, k.zoneFree[z])
	k.devFree = max(start, k.devFree) + float64(n)/k.c.WriteBW
	end := max(start+float64(n)/k.c.ZoneBW, k.devFree)
	k.zoneFree[z] = end
	a.t = end
}

// read: n bytes read by the collector.
func (k *clock) read(n int64) {
	if k == nil || k.cur == nil {
		return
	}
	k.devFree = max(k.cur.t, k.devFree) + float64(n)/k.c.ReadBW
	k.cur.t = k.devFree
}

// zoneOp: a reset or finish of zone z taking d seconds, the device busy.
func (k *clock) zoneOp(z int, d float64) {
	if k == nil || k.cur == nil {
		return
	}
	end := max(k.cur.t, k.zoneFree[z], k.devFree) + d
	k.devFree, k.zoneFree[z], k.cur.t = end, end, end
}

func (k *clock) reset(z int) {
	if k != nil {
		k.zoneOp(z, k.c.ResetS)
	}
}

func (k *clock) finish(z int) {
	if k != nil {
		k.zoneOp(z, k.c.FinishS)
	}
}

// now is the current writer's time (0 without one).
func (k *clock) now() float64 {
	if k == nil || k.cur == nil {
		return 0
	}
	return k.cur.t
}

// stalled adds the time since t0 to the current writer's stall: what a
// relocation on its path took.
func (k *clock) stalled(t0 float64) {
	if k == nil || k.cur == nil {
		return
	}
	k.cur.stall += k.cur.t - t0
}

// timing is what the time model reports of a replay: the latency of every
// stored create (from its arrival in the trace to its last byte on the
// device) and its stall (the time relocation took on its path), in seconds.
type timing struct {
	LatencyP50S    *float64 `json:"create_latency_p50_s,omitempty"`
	LatencyP99S    *float64 `json:"create_latency_p99_s,omitempty"`
	LatencyMaxS    *float64 `json:"create_latency_max_s,omitempty"`
	StallP99S      *float64 `json:"stall_p99_s,omitempty"`
	StallMaxS      *float64 `json:"stall_max_s,omitempty"`
	StallTotalS    *float64 `json:"stall_total_s,omitempty"`
	StalledCreates *int     `json:"stalled_creates,omitempty"`
}

func summariseTiming(lat, stall []float64) timing {
	var t timing
	if len(lat) == 0 {
		return t
	}
	t.LatencyP50S = ptr(roundUS(percentile(lat, 0.50)))
	t.LatencyP99S = ptr(roundUS(percentile(lat, 0.99)))
	t.LatencyMaxS = ptr(roundUS(slices.Max(lat)))
	t.StallP99S = ptr(roundUS(percentile(stall, 0.99)))
	t.StallMaxS = ptr(roundUS(slices.Max(stall)))
	var sum float64
	n := 0
	for _, s := range stall {
		sum += s
		if s > 0 {
			n++
		}
	}
	t.StallTotalS = ptr(roundUS(sum))
	t.StalledCreates = &n
	return t
}

// percentile is the nearest-rank q-quantile of xs (not empty).
func percentile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// roundUS rounds seconds to microseconds.
func roundUS(x float64) float64 { return math.Round(x*1e6) / 1e6 }
