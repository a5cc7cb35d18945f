package main

import (
	"fmt"
	"math"
	"slices"
)

// costs are the times of the device's operations: the time model of the
// replay. With WriteBW 0 there is none, and no latency is reported.
//
// The model (clock): the replay records, for every create, the device
// operations it made, in order: the relocation it needed (the collector's
// reads, writes and resets) and its image's writes; for every delete, its
// resets. Then the jobs run in time (simulate): each from its arrival in
// the trace, or, for a policy that writes only so many images at once,
// from the end of the image whose stream slot it takes; each does its
// operations one after the other. Writes being made at once share the
// bandwidth fairly: a zone's among its writers, at most ZoneBW in all, and
// the device's, WriteBW, among the zones (so that zones written at once
// run in parallel until their sum reaches the device's bandwidth: the
// parallelism of active zones); the collector's reads share ReadBW; a
// reset takes ResetS and a finish FinishS of the job that asked for it. A
// create's latency is from its arrival to its last byte; its stall is the
// time its relocation took.
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

// op is one operation of a job on the device: n bytes written to or read
// from zone, or a reset or finish of zone; gc: the collector's (a stall of
// the job's).
type op struct {
	kind byte // 'w', 'r', 'x' (reset), 'f' (finish)
	zone int
	n    int64
	gc   bool
}

// job is a writer: a create (its image's writes, and the relocation it
// needed before them), or a delete (the resets it made), with when it
// arrived and the job it waited for (its stream slot's previous holder).
type job struct {
	arrive float64
	after  *job
	ops    []op
	stored bool // a create that stored its image: its latency counts
	done   float64
	stall  float64
}

// clock records what every job does to the device, in the replay's order;
// simulate then runs the jobs in time.
type clock struct {
	c    costs
	jobs []*job
	cur  *job
	gc   bool
}

func newClock(c costs) *clock {
	return &clock{c: c.withDefaults()}
}

// start makes a new job, arriving at t, the one the device's operations
// are recorded for (after: the job it waits for, or nil).
func (k *clock) start(t float64, after *job) *job {
	if k == nil {
		return nil
	}
	j := &job{arrive: t, after: after}
	k.jobs = append(k.jobs, j)
	k.cur = j
	return j
}

// on makes j the job the device's operations are recorded for (nil: none).
func (k *clock) on(j *job) {
	if k != nil {
		k.cur = j
	}
}

func (k *clock) add(o op) {
	if k == nil || k.cur == nil {
		return
	}
	o.gc = k.gc
	ops := k.cur.ops
	// A job's consecutive writes of a zone are one operation.
	if n := len(ops); n > 0 && o.kind == 'w' && ops[n-1].kind == 'w' && ops[n-1].zone == o.zone && ops[n-1].gc == o.gc {
		ops[n-1].n += o.n
		return
	}
	k.cur.ops = append(ops, o)
}

func (k *clock) write(z int, n int64) { k.add(op{kind: 'w', zone: z, n: n}) }
func (k *clock) read(n int64)         { k.add(op{kind: 'r', n: n}) }
func (k *clock) reset(z int)          { k.add(op{kind: 'x', zone: z}) }
func (k *clock) finish(z int)         { k.add(op{kind: 'f', zone: z}) }

// relocating marks what follows as the collector's (true) or not.
func (k *clock) relocating(on bool) {
	if k != nil {
		k.gc = on
	}
}

// simulate runs the recorded jobs in time: every job does its operations
// one after the other, from its arrival (and its predecessor's end); the
// writes being made share the bandwidth, each zone's among its writers and
// the device's among the zones, fairly (a zone takes no more than its
// share, the rest goes to the others, as water fills); reads share the
// device's read bandwidth; a reset or finish takes its time. It sets every
// job's end and stall.
func (k *clock) simulate() {
	if k == nil || len(k.jobs) == 0 {
		return
	}
	type run struct {
		j    *job
		i    int     // the op being done
		left float64 // its bytes (or seconds, a reset or finish) still to go
		rate float64
		took float64 // when it began
	}
	c := k.c
	order := slices.Clone(k.jobs) // by arrival, in the replay's order on a tie
	slices.SortStableFunc(order, func(a, b *job) int { return cmpF(a.arrive, b.arrive) })
	finished := map[*job]bool{}
	blocked := map[*job][]*job{} // jobs that arrived, by the job they wait for
	var active []*run
	now := 0.0
	var launch func(j *job)
	// begin starts r's next op; false: the job is done (and the jobs
	// waiting for it start).
	begin := func(r *run) bool {
		for r.i < len(r.j.ops) {
			o := r.j.ops[r.i]
			switch o.kind {
			case 'w', 'r':
				r.left = float64(o.n)
			case 'x':
				r.left = c.ResetS
			case 'f':
				r.left = c.FinishS
			}
			r.took = now
			if r.left > 0 {
				return true
			}
			r.i++
		}
		r.j.done = now
		finished[r.j] = true
		for _, w := range blocked[r.j] {
			launch(w)
		}
		delete(blocked, r.j)
		return false
	}
	launch = func(j *job) {
		r := &run{j: j}
		if begin(r) {
			active = append(active, r)
		}
	}
	next := 0
	for next < len(order) || len(active) > 0 {
		// Start the jobs that arrived, or set them to wait.
		for next < len(order) && order[next].arrive <= now {
			j := order[next]
			next++
			if j.after == nil || finished[j.after] {
				launch(j)
			} else {
				blocked[j.after] = append(blocked[j.after], j)
			}
		}
		if len(active) == 0 {
			if next < len(order) {
				now = order[next].arrive
				continue
			}
			// Jobs waiting for one that never ran (none should): run them.
			for _, js := range blocked {
				for _, j := range js {
					j.after = nil
					launch(j)
				}
			}
			clear(blocked)
			if len(active) == 0 {
				break
			}
		}
		// Rates: writes per zone, then the device's share (water-filling).
		perZone := map[int]int{}
		nreads := 0
		for _, r := range active {
			switch r.j.ops[r.i].kind {
			case 'w':
				perZone[r.j.ops[r.i].zone]++
			case 'r':
				nreads++
			}
		}
		var caps []float64
		for _, r := range active {
			if r.j.ops[r.i].kind == 'w' {
				caps = append(caps, c.ZoneBW/float64(perZone[r.j.ops[r.i].zone]))
			}
		}
		level := waterLevel(caps, c.WriteBW)
		for _, r := range active {
			switch r.j.ops[r.i].kind {
			case 'w':
				r.rate = min(c.ZoneBW/float64(perZone[r.j.ops[r.i].zone]), level)
			case 'r':
				r.rate = c.ReadBW / float64(nreads)
			default:
				r.rate = 1 // seconds per second
			}
		}
		// The next event: an op's end or a job's arrival.
		t := math.Inf(1)
		for _, r := range active {
			t = min(t, now+r.left/r.rate)
		}
		if next < len(order) {
			t = min(t, order[next].arrive)
		}
		dt := t - now
		now = t
		ending := active
		active = nil
		var still []*run
		for _, r := range ending {
			r.left -= r.rate * dt
			// Done when less than a nanosecond is left, or less than the
			// clock can tell from now.
			if rem := r.left / r.rate; rem > 1e-9 && now+rem > now {
				still = append(still, r)
				continue
			}
			if r.j.ops[r.i].gc {
				r.j.stall += now - r.took
			}
			r.i++
			if begin(r) {
				still = append(still, r)
			}
		}
		active = append(still, active...) // with the jobs that ended's followers
	}
}

// waterLevel is the rate every flow gets under the device's bandwidth
// total, each at most its cap: the level l with sum(min(cap, l)) = total,
// or +Inf if the caps fit.
func waterLevel(caps []float64, total float64) float64 {
	sum := 0.0
	for _, x := range caps {
		sum += x
	}
	if sum <= total {
		return math.Inf(1)
	}
	s := slices.Clone(caps)
	slices.Sort(s)
	left := total
	for i, x := range s {
		share := left / float64(len(s)-i)
		if x >= share {
			return share
		}
		left -= x
	}
	return math.Inf(1)
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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

// timing runs the jobs in time and reports the creates' (nothing without
// a time model).
func (k *clock) timing() timing {
	if k == nil {
		return timing{}
	}
	k.simulate()
	var lat, stall []float64
	for _, j := range k.jobs {
		if j.stored {
			lat = append(lat, j.done-j.arrive)
			stall = append(stall, j.stall)
		}
	}
	return summariseTiming(lat, stall)
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
