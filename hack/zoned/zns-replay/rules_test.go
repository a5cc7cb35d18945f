package main

import (
	"fmt"
	"math/rand"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// The rules every policy that relocates keeps alike (the reserve as the
// admission bound alone, resets at the delete, cleaning on demand, partly
// written victims, the cleaner's rule, another head when one's own is full),
// and the policies added to read zone-pack against: the hint log (ZenFS's
// allocator), the oracle, and each log's variant that cleans while idle.

// mixedTrace is a trace of containers with their own intervals, retention
// and start times (not in lockstep), each image declaring the lifetime its
// retention promises (interval * keep) as its hint; some containers change
// their retention halfway, so that the hint and the past lifetimes are
// wrong about them.
func mixedTrace(seed int64, containers int, duration float64) []event {
	rng := rand.New(rand.NewSource(seed))
	type ctr struct {
		name           string
		mem            int64
		interval, next float64
		keep, keep2    int
		kept           []string
		n              int
	}
	var cs []*ctr
	for i := range containers {
		c := &ctr{name: fmt.Sprint("c", i), mem: int64(1+rng.Intn(8)) * 256 * KiB,
			interval: float64(60 * (1 + rng.Intn(5))), keep: 1 + rng.Intn(3)}
		c.keep2 = c.keep
		if rng.Intn(3) == 0 {
			c.keep2 = 1 + rng.Intn(4)
		}
		c.next = float64(rng.Intn(int(c.interval)))
		cs = append(cs, c)
	}
	var out []event
	for {
		var c *ctr
		for _, x := range cs {
			if x.next < duration && (c == nil || x.next < c.next) {
				c = x
			}
		}
		if c == nil {
			return out
		}
		keep := c.keep
		if c.next > duration/2 {
			keep = c.keep2
		}
		cp := fmt.Sprint("cp", c.n)
		c.n++
		e := ev(c.next, "create", c.name, cp, c.mem+int64(rng.Intn(64))*KiB)
		e.Hint = c.interval * float64(c.keep)
		out = append(out, e)
		c.kept = append(c.kept, cp)
		for len(c.kept) > keep {
			out = append(out, ev(c.next, "delete", c.name, c.kept[0], 0))
			c.kept = c.kept[1:]
		}
		c.next += c.interval
	}
}

var relocating = []string{"shared-log", "multi-log", "hint-log", "oracle", "zone-pack"}

func TestMixedTraceReplaysUnderEveryPolicyAndCleaner(t *testing.T) {
	es := mixedTrace(1, 8, 3600)
	g := geo(MiB, 24, 6, 6)
	for _, policy := range policies {
		for _, c := range cleaners {
			for _, r := range []int{0, 1, 2} {
				checkedReplay(t, es, g, policy, params{Chunk: 256 * KiB, GCReserve: r, Cleaner: c})
			}
		}
	}
}

// With a reserve of 0 the logs no longer fail the creates that only the
// reserve failed: the device holds the trace, and cleaning on demand finds
// the room (the multi-head and hint logs' in any host head).
func TestReserveZeroLogsFailNoCreateTheReserveFailed(t *testing.T) {
	es := genTrace([]int64{16 * MiB, 64 * MiB, 128 * MiB, 256 * MiB}, 24, 3, 0.1, 1)
	g := geo(64*MiB, 31, 8, 8)
	failed := func(policy string, r int) []failure {
		o, err := replay(es, g, policy, params{Chunk: MiB, GCReserve: r, Cleaner: "greedy"}, false)
		assert.NilError(t, err)
		return o.Failures
	}
	for _, policy := range []string{"shared-log", "multi-log", "hint-log"} {
		f := failed(policy, 2)
		assert.Check(t, len(f) > 0, "%s: no create failed under a reserve of 2", policy)
		for _, x := range f {
			assert.Check(t, is.Contains(x.Reason, "GC reserve"), policy)
		}
		assert.Check(t, is.Len(failed(policy, 0), 0), policy)
	}
}

// The oracle, placing by the death times it knows, fails no more creates
// than any other policy on small traces, and over the traces both store
// whole relocates no more than the shared and multi-head logs. It is no
// bound (zns_bound.py's exact optimum is): on these traces zone-pack,
// keeping an empty zone to relocate into as the logs do, relocates about
// 1.3 times what the oracle does, but less than the shared log.
func TestOracleWritesNoMoreThanAnyPolicy(t *testing.T) {
	g := geo(MiB, 24, 6, 6)
	relocated := map[string]int64{}
	var oracle int64
	for seed := int64(1); seed <= 12; seed++ {
		es := mixedTrace(seed, 6, 1800)
		pp := params{Chunk: 256 * KiB, Cleaner: "greedy"}
		o0, err := replay(es, g, "oracle", pp, false)
		assert.NilError(t, err)
		for _, policy := range policies {
			o, err := replay(es, g, policy, pp, false)
			assert.NilError(t, err)
			assert.Check(t, o0.Metrics.Failed <= o.Metrics.Failed, "seed %d: %s", seed, policy)
			if o0.Metrics.Failed == 0 && o.Metrics.Failed == 0 {
				relocated[policy] += o.Metrics.RelocatedBytes
				relocated["oracle vs "+policy] += o0.Metrics.RelocatedBytes
			}
		}
		oracle += o0.Metrics.RelocatedBytes
	}
	for _, policy := range []string{"shared-log", "multi-log"} {
		assert.Check(t, relocated["oracle vs "+policy] <= relocated[policy], "the oracle relocated %d, %s %d", relocated["oracle vs "+policy], policy, relocated[policy])
	}
	assert.Check(t, relocated["zone-pack"] < relocated["shared-log"], "zone-pack relocated %d, the shared log %d", relocated["zone-pack"], relocated["shared-log"])
	assert.Check(t, oracle > 0)
}

// The cost-benefit cleaner takes an old, half live zone over a young one
// with less live data, which the greedy cleaner takes; both take a zone
// with nothing live first.
func TestCleanerRules(t *testing.T) {
	b := newBase(geo(MiB, 4, 0, 0))
	b.now = 100
	b.live = []int64{MiB / 2, 2 * MiB / 5, MiB / 10, 0}
	b.written = []float64{0, 90, 99, 50}
	assert.Check(t, is.Equal(pickVictim(b, "greedy", []int{0, 1}), 1))
	assert.Check(t, is.Equal(pickVictim(b, "cost-benefit", []int{0, 1}), 0))
	assert.Check(t, is.Equal(pickVictim(b, "greedy", []int{0, 1, 2, 3}), 3))
	assert.Check(t, is.Equal(pickVictim(b, "cost-benefit", []int{0, 1, 2, 3}), 3))
	assert.Check(t, is.Equal(pickVictim(b, "cost-benefit", nil), -1))
}

// A log cleans a partly written zone when that is where the dead data is:
// c's quarter dies in the shared log's half written head (zone 1), and the next
// create only fits once that zone is emptied.
func TestLogsCleanPartlyWrittenZones(t *testing.T) {
	g := geo(MiB, 3, 2, 2)
	es := []event{
		ev(0, "create", "a", "cp0", MiB), ev(1, "create", "c", "cp0", MiB/4), ev(2, "create", "d", "cp0", MiB/4),
		ev(3, "delete", "c", "cp0", 0),
		ev(4, "create", "e", "cp0", MiB+3*MiB/4),
	}
	pp := params{Chunk: 256 * KiB, GCReserve: 0, Cleaner: "greedy"}
	p := checkedReplay(t, es, g, "shared-log", pp)
	b := p.state()
	assert.Check(t, is.Len(b.failures, 0))
	assert.Check(t, is.Equal(b.dev.relocatedBytes, int64(MiB/4)))
}

// logs are the policies that relocate with a collector of the harness's.
var logs = []string{"shared-log", "multi-log", "hint-log", "oracle", "shared-log-idle", "multi-log-idle", "hint-log-idle", "oracle-idle"}

// A log resets a zone by the delete that leaves nothing live in it, not
// later on a create's path: once a is deleted its zone is empty, and the
// creates that need it stall for nothing.
func TestLogsResetDeadZonesAtTheDelete(t *testing.T) {
	g := geo(MiB, 2, 2, 2)
	es := []event{ev(0, "create", "a", "cp0", MiB), ev(1, "delete", "a", "cp0", 0),
		ev(2, "create", "b", "cp0", MiB), ev(3, "create", "c", "cp0", MiB)}
	for _, policy := range logs {
		b := checkedReplay(t, es[:2], g, policy, params{Chunk: 256 * KiB, Cleaner: "greedy"}).state()
		assert.Check(t, b.dev.empty(0), "%s: zone 0 is %s", policy, b.dev.cond[0])
		assert.Check(t, is.Equal(b.dev.m.Resets, 1), policy)
		o := timedReplay(t, es, g, policy, timed(costs{WriteBW: zoneBW, ResetS: 1}))
		assert.Check(t, is.Len(o.Failures, 0), policy)
		assert.Check(t, is.Equal(*o.Metrics.StalledCreates, 0), policy)
		assert.Check(t, near(o.Metrics.LatencyMaxS, mib/zoneBW), "%s: %v", policy, *o.Metrics.LatencyMaxS)
	}
}

// The multi-head and hint logs go on at another host head when theirs is
// full and no empty zone is left, as zone-pack puts a tail in any head
// with room: a's zones are full and b's head has room, so a's third image
// goes there instead of failing, and the room the admission counted (every
// host head) is what it could use: nothing was relocated for it.
func TestHeadedLogsGoOnAtAnotherHeadWhenTheirsIsFull(t *testing.T) {
	g := geo(MiB, 3, 3, 3) // two host heads and the collector's
	hinted := func(e event, h float64) event { e.Hint = h; return e }
	es := []event{
		hinted(ev(0, "create", "a", "cp0", MiB), 1000), hinted(ev(1, "create", "b", "cp0", MiB/2), 100),
		hinted(ev(2, "create", "a", "cp1", MiB), 1000), hinted(ev(3, "create", "a", "cp2", MiB/4), 1000),
	}
	for _, policy := range []string{"multi-log", "hint-log", "multi-log-idle", "hint-log-idle"} {
		b := checkedReplay(t, es, g, policy, params{Chunk: 64 * KiB, Cleaner: "greedy"}).state()
		assert.Check(t, is.Len(b.failures, 0), policy)
		assert.Check(t, is.Equal(b.dev.relocatedBytes, int64(0)), policy)
		zb := b.images[key{"b", "cp0"}].extents[0].zone
		assert.Check(t, is.Equal(b.images[key{"a", "cp2"}].extents[0].zone, zb), policy)
	}
}

// room() counts the heads host writes can use, every host head, and never
// the collector's own.
func TestLogsRoomIsWhatHostWritesCanUse(t *testing.T) {
	g := geo(MiB, 6, 4, 4)
	for _, policy := range []string{"multi-log", "hint-log"} {
		p, err := newPlacement(policy, g, params{Chunk: 64 * KiB, Cleaner: "greedy"})
		assert.NilError(t, err)
		l := p.(*sharedLog)
		im := &image{container: "a", checkpoint: "cp0"}
		for k, z := range map[string]int{"0": 0, "1": 1, "gc": 2} {
			l.heads[k] = z
			assert.NilError(t, l.write(im, z, MiB/4, k == "gc"))
		}
		// 3 empty zones but the spare, and 3/4 MiB left in each host head.
		assert.Check(t, is.Equal(l.room(), int64(2*MiB+3*MiB/2)), policy)
	}
}

// The hint log is ZenFS's allocator: an image goes to the open zone whose
// lifetime class is the least above its own; failing that, to a new zone
// of its class while fewer than the heads are open; then to a zone of its
// own class; and with every head open and none that suits it, it finishes
// the head with the least room left to open its own.
func TestHintLogIsZenFSAllocator(t *testing.T) {
	g := geo(MiB, 8, 4, 4) // three host heads and the collector's
	hinted := func(t float64, c string, h float64) event {
		e := ev(t, "create", c, "cp0", MiB/4)
		e.Hint = h
		return e
	}
	es := []event{
		hinted(0, "a", 100),  // class 6: a new zone, 0
		hinted(1, "b", 1000), // class 9: zone 0's data dies sooner: a new zone, 1
		hinted(2, "c", 100),  // zone 1's lives longer: there, not in zone 0 of its own class
		hinted(3, "d", 1000), // only zone 1 is of its class and a head is free: a new zone, 2
		hinted(4, "e", 1000), // every head open: zone 1, the first of its class
		hinted(5, "f", 5000), // none suits and every head is open: zone 1 (3/4 written) finished, a new zone, 3
	}
	b := checkedReplay(t, es, g, "hint-log", params{Chunk: 64 * KiB, Cleaner: "greedy"}).state()
	want := map[string]int{"a": 0, "b": 1, "c": 1, "d": 2, "e": 1, "f": 3}
	for c, z := range want {
		assert.Check(t, is.Equal(b.images[key{c, "cp0"}].extents[0].zone, z), c)
	}
	assert.Check(t, b.dev.full(1))
	assert.Check(t, is.Equal(b.dev.m.Finishes, 1))
	assert.Check(t, is.Equal(b.dev.m.FinishedUnwritten, int64(MiB/4)))
}

// peakLive is the most live data of events (block padded) at any time.
func peakLive(events []event, g geometry) int64 {
	size := map[key]int64{}
	var live, peak int64
	for _, e := range events {
		switch e.Op {
		case "create":
			size[e.key()] = g.padded(e.Bytes)
			live += size[e.key()]
			peak = max(peak, live)
		case "delete":
			live -= size[e.key()]
			delete(size, e.key())
		}
	}
	return peak
}

// keptAndDeleted is rounds of a half-zone checkpoint each of containers a
// and b, 10 s apart, b's kept and a's deleted a round later: every zone
// they share ends half dead.
func keptAndDeleted(rounds int) []event {
	var es []event
	for r := range rounds {
		cp := fmt.Sprint("cp", r)
		es = append(es, ev(float64(10*r), "create", "a", cp, MiB/2), ev(float64(10*r), "create", "b", cp, MiB/2))
		if r > 0 {
			es = append(es, ev(float64(10*r), "delete", "a", fmt.Sprint("cp", r-1), 0))
		}
	}
	return es
}

// The reserve is the admission bound alone, for the logs as for zone-pack:
// a log may write every zone (its collector keeps one empty while it can,
// at every reserve), so that on devices with the same zones outside the
// reserve, a reserve of 2 zones gives a log one zone more than a reserve
// of 1 and it relocates less or fails less; and when the collector frees
// nothing, host writes take its spare zone.
func TestReserveIsTheAdmissionBoundAlone(t *testing.T) {
	es := keptAndDeleted(4)
	pp := params{Chunk: 256 * KiB, Cleaner: "greedy"}
	relocated := func(policy string, reserve int) int64 {
		pp.GCReserve = reserve
		b := checkedReplay(t, es, geo(MiB, 3+reserve, 2, 2), policy, pp).state()
		assert.Check(t, is.Len(b.failures, 0), "%s, reserve %d", policy, reserve)
		return b.dev.relocatedBytes
	}
	assert.Check(t, is.Equal(relocated("shared-log", 1), int64(MiB)))
	assert.Check(t, is.Equal(relocated("shared-log", 2), int64(0)))

	// Every log, over traces at 95% of the zones outside the reserve:
	// somewhere reserves 1 and 2 part.
	for _, policy := range logs {
		differ := false
		for seed := int64(1); seed <= 6 && !differ; seed++ {
			es := mixedTrace(seed, 8, 3600)
			out := map[int]metrics{}
			for _, r := range []int{1, 2} {
				g := geo(MiB, r+int((peakLive(es, geo(MiB, 1, 0, 0))*100+95*MiB-1)/(95*MiB)), 6, 6)
				o, err := replay(es, g, policy, params{Chunk: 256 * KiB, GCReserve: r, Cleaner: "greedy"}, false)
				assert.NilError(t, err)
				out[r] = o.Metrics
			}
			differ = out[1].Failed != out[2].Failed || out[1].RelocatedBytes != out[2].RelocatedBytes
		}
		assert.Check(t, differ, "%s: reserves 1 and 2 alike on every trace", policy)
	}

	// The collector frees nothing here; b takes the last zone.
	for _, policy := range logs {
		b := checkedReplay(t, []event{ev(0, "create", "a", "cp0", MiB), ev(1, "create", "b", "cp0", MiB)},
			geo(MiB, 2, 2, 2), policy, params{Chunk: 256 * KiB, Cleaner: "greedy"}).state()
		assert.Check(t, is.Len(b.failures, 0), policy)
	}
}

// A log's idle variant cleans after the delete, off any create's path:
// the shared log relocates the two half dead zones on the create of round
// 3 and stalls it; its idle variant does the same after round 2's delete
// (and cleans after round 3's too, for a round that never comes), and no
// create stalls.
func TestIdleLogsCleanOffTheCreatePath(t *testing.T) {
	es := keptAndDeleted(4)
	g := geo(MiB, 4, 2, 2)
	pp := timed(costs{WriteBW: zoneBW, ResetS: 0.001})
	pp.Chunk = 256 * KiB
	pp.GCReserve = 1
	demand := timedReplay(t, es, g, "shared-log", pp)
	idle := timedReplay(t, es, g, "shared-log-idle", pp)
	assert.Check(t, is.Len(demand.Failures, 0))
	assert.Check(t, is.Len(idle.Failures, 0))
	assert.Check(t, is.Equal(demand.Metrics.RelocatedBytes, int64(MiB)))
	assert.Check(t, is.Equal(idle.Metrics.RelocatedBytes, int64(3*MiB/2)))
	assert.Check(t, is.Equal(*demand.Metrics.StalledCreates, 2)) // a3 and b3
	assert.Check(t, is.Equal(*idle.Metrics.StalledCreates, 0))
	assert.Check(t, near(idle.Metrics.StallTotalS, 0))
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
