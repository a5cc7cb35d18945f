package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/v2/daemon/internal/zoned"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

const KiB = 1 << 10

func ev(t float64, op, container, checkpoint string, size int64) event {
	return event{TimeS: t, Op: op, Container: container, Checkpoint: checkpoint, Bytes: size}
}

func geo(zoneSize int64, zones, maxOpen, maxActive int) geometry {
	return geometry{ZoneSize: zoneSize, ZoneCapacity: zoneSize, Zones: zones, MaxOpen: maxOpen, MaxActive: maxActive, Block: 4096}
}

// The default geometry of the harness: 32 zones of 64 MiB, max open and
// active 8.
var defaultGeo = geo(64*MiB, 32, 8, 8)

var defaultParams = params{Chunk: MiB, GCReserve: 2, Cleaner: "greedy"}

// genTrace is a trace like the harness's generator's (hack/ab/zns.py): the
// containers checkpointed together every 5 minutes, each keeping its last
// keep, the image the memory held +-5% plus 512 KiB, and a chance skip that
// a container misses a round.
func genTrace(mem []int64, rounds, keep int, skip float64, seed int64) []event {
	rng := rand.New(rand.NewSource(seed))
	kept := map[int][]string{}
	var out []event
	for r := range rounds {
		t := float64(r * 300)
		cp := fmt.Sprintf("cp%d", r)
		for i, m := range mem {
			if r > 0 && rng.Float64() < skip {
				continue
			}
			size := int64(float64(m)*(1+(rng.Float64()*0.1-0.05))) + 512*KiB
			out = append(out, ev(t, "create", fmt.Sprint(m>>20, "MiB"), cp, size))
			kept[i] = append(kept[i], cp)
		}
		for i, m := range mem {
			for len(kept[i]) > keep {
				out = append(out, ev(t, "delete", fmt.Sprint(m>>20, "MiB"), kept[i][0], 0))
				kept[i] = kept[i][1:]
			}
		}
	}
	return out
}

// underPressure is a trace that keeps most of the default device full.
func underPressure() []event {
	return genTrace([]int64{16 * MiB, 64 * MiB, 128 * MiB, 256 * MiB}, 24, 3, 0.1, 1)
}

// checkedReplay replays events under policy, checking the placement's
// invariants after every step, and returns the placement.
func checkedReplay(t *testing.T, events []event, g geometry, policy string, pp params) placement {
	t.Helper()
	markDeaths(events)
	p, err := newPlacement(policy, g, pp)
	assert.NilError(t, err)
	b := p.state()
	for _, grp := range groups(events) {
		if grp[0].Op == "create" {
			assert.NilError(t, createGroup(p, grp, pp.Chunk), "%s %+v", policy, pp)
		} else {
			assert.NilError(t, deleteImage(p, grp[0]))
		}
		var live, inImages, padded int64
		for _, l := range b.live {
			live += l
		}
		for _, im := range b.images {
			padded += im.padded
			for _, x := range im.extents {
				inImages += x.length
			}
		}
		assert.Assert(t, is.Equal(live, inImages), "%s at %gs", policy, grp[0].TimeS)
		assert.Assert(t, is.Equal(live, padded), "%s at %gs", policy, grp[0].TimeS)
		zones, err := b.dev.m.ReportZones()
		assert.NilError(t, err)
		open, active := 0, 0
		for i, z := range zones {
			// The device wrapper follows the model.
			assert.Assert(t, is.Equal(z.Cond, b.dev.cond[i]), "zone %d", i)
			if z.Cond != zoned.CondFull {
				assert.Assert(t, is.Equal(z.WP-z.Start, b.dev.wp[i]), "zone %d", i)
			}
			assert.Assert(t, b.dev.wp[i] <= g.ZoneCapacity)
			assert.Assert(t, b.live[i] <= b.dev.wp[i] || b.dev.full(i), "zone %d: %d live, %d written", i, b.live[i], b.dev.wp[i])
			switch z.Cond {
			case zoned.CondImpOpen, zoned.CondExpOpen:
				open++
				active++
			case zoned.CondClosed:
				active++
			}
		}
		if g.MaxOpen > 0 {
			assert.Assert(t, open <= g.MaxOpen)
		}
		if g.MaxActive > 0 {
			assert.Assert(t, active <= g.MaxActive)
		}
		if policy == "zone-aware" {
			owner := map[int]*image{}
			for _, im := range b.images {
				for _, z := range im.zones {
					assert.Assert(t, owner[z] == nil, "zone %d owned by two images", z)
					owner[z] = im
				}
			}
			for i := range zones {
				assert.Assert(t, len(b.dev.owners[i]) <= 1, "zone %d mixes containers", i)
				// Between steps every zone is an image's (finished) or empty.
				assert.Assert(t, b.dev.full(i) == (owner[i] != nil), "zone %d", i)
				assert.Assert(t, b.dev.full(i) || b.dev.empty(i), "zone %d", i)
			}
		}
		if _, log := p.(*sharedLog); policy == "zone-pack" || log {
			// A zone is reset as soon as nothing in it lives.
			for i := range zones {
				if b.live[i] == 0 {
					assert.Assert(t, b.dev.empty(i), "zone %d holds nothing live and is %s", i, b.dev.cond[i])
				}
			}
		}
	}
	return p
}

func TestGeometryProblems(t *testing.T) {
	g := geometry{ZoneSize: 64 * MiB, ZoneCapacity: 65 * MiB, Zones: 32, MaxOpen: 9, MaxActive: 4, Block: 1000}
	probs := strings.Join(g.problems(), "\n")
	assert.Check(t, is.Contains(probs, "exceeds the zone size"))
	assert.Check(t, is.Contains(probs, "power of two"))
	assert.Check(t, is.Contains(probs, "exceed 4 active"))
	assert.Check(t, is.Len(defaultGeo.problems(), 0))

	assert.Check(t, is.Len(defaultParams.problems(defaultGeo), 0))
	assert.Check(t, is.Len(params{Chunk: MiB, GCReserve: 2, Heads: 7, Cleaner: "greedy"}.problems(defaultGeo), 0))
	probs = strings.Join(params{Chunk: MiB, GCReserve: 2, Heads: 8, Cleaner: "greedy"}.problems(defaultGeo), "\n")
	assert.Check(t, is.Contains(probs, "heads: want 0 (as many as the open limit allows) to 7"))
	assert.Check(t, is.Equal(maxHeads(geo(64*MiB, 32, 0, 0)), 16))
	probs = strings.Join(params{Chunk: 1000, GCReserve: 32}.problems(defaultGeo), "\n")
	assert.Check(t, is.Contains(probs, "chunk: want a positive multiple"))
	assert.Check(t, is.Contains(probs, "gc-reserve: want 0 to 31 zones"))
	assert.Check(t, is.Contains(probs, `cleaner: want one of greedy, cost-benefit, got ""`))
}

// Two containers checkpointed together (1 MiB each, interleaved in 256 KiB
// chunks over 1 MiB zones), then a's deleted: both zones are half live.
var halfLive = []event{ev(0, "create", "a", "cp0", MiB), ev(0, "create", "b", "cp0", MiB), ev(1, "delete", "a", "cp0", 0),
	ev(2, "create", "c", "cp0", MiB), ev(3, "create", "d", "cp0", MiB)}

var small = geo(MiB, 4, 2, 2)

func TestSharedLogRelocatesLiveDataOfPartlyDeadZones(t *testing.T) {
	pp := params{Chunk: 256 * KiB, GCReserve: 1}
	p := checkedReplay(t, halfLive, small, "shared-log", pp)
	b := p.state()
	// d needs a zone when only the reserve is left: the collector moves
	// b's halves out of zones 0 and 1 (into zone 3) and resets both.
	assert.Check(t, is.Equal(b.dev.relocatedBytes, int64(MiB)))
	assert.Check(t, is.Equal(b.dev.hostBytes, int64(4*MiB)))
	assert.Check(t, is.Equal(b.dev.m.Resets, 2))
	assert.Check(t, is.Len(b.failures, 0))
	var zones []int
	for _, x := range b.images[key{"b", "cp0"}].extents {
		zones = append(zones, x.zone)
	}
	assert.Check(t, is.DeepEqual(zones, []int{3}))
	o, err := replay(halfLive, small, "shared-log", pp, false)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(*o.Metrics.WriteAmplification, 1.25))
	assert.Check(t, is.Equal(o.Metrics.MixedZonesMax, 2))
	assert.Check(t, is.DeepEqual(o.Series.RelocatedBytes, []int64{0, 0, 0, MiB}))
}

func TestSharedLogFullDeviceFailsTheCreateAndGoesOn(t *testing.T) {
	es := []event{ev(0, "create", "a", "cp0", 3*MiB), ev(1, "create", "b", "cp0", MiB),
		ev(2, "delete", "b", "cp0", 0), ev(3, "delete", "a", "cp0", 0), ev(4, "create", "b", "cp1", MiB)}
	o, err := replay(es, small, "shared-log", params{Chunk: MiB, GCReserve: 1}, false)
	assert.NilError(t, err)
	assert.Assert(t, is.Len(o.Failures, 1))
	assert.Check(t, is.Equal(o.Failures[0].Container+"/"+o.Failures[0].Checkpoint, "b/cp0"))
	assert.Check(t, is.Contains(o.Failures[0].Reason, "device full"))
	assert.Check(t, is.Equal(o.Failures[0].EmptyZones, 1)) // the reserve's: the admission bound failed it
	assert.Check(t, is.Equal(o.Failures[0].DeadBytes, int64(0)))
	assert.Check(t, is.Equal(o.Metrics.Failed, 1))
	assert.Check(t, is.Equal(o.Metrics.StoredBytes, int64(4*MiB)))
}

// A failed create records what the device held when it failed: the
// written bytes no longer live, which relocation could have freed, and the
// empty zones.
func TestAFailureRecordsTheDeadDataAndEmptyZones(t *testing.T) {
	b := newBase(geo(MiB, 4, 2, 2))
	a := &image{container: "a", checkpoint: "cp0"}
	assert.NilError(t, b.write(a, 0, MiB/2, false))
	assert.NilError(t, b.write(a, 1, MiB/4, false))
	b.dropExtents(a)
	b.fail(&image{container: "b", checkpoint: "cp0", bytes: MiB}, "device full")
	assert.Check(t, is.DeepEqual(b.failures, []failure{{Container: "b", Checkpoint: "cp0", Bytes: MiB, Reason: "device full",
		DeadBytes: 3 * MiB / 4, EmptyZones: 2}}))
}

func TestSharedLogUnderPressure(t *testing.T) {
	p := checkedReplay(t, underPressure(), defaultGeo, "shared-log", defaultParams)
	b := p.state()
	assert.Check(t, b.dev.relocatedBytes > 0)
	assert.Check(t, b.dev.mixed() > 0)
	assert.Check(t, is.Equal(b.dev.m.MaxOpen, 1))
}

func TestMultiLogHeadsOfTheirOwnNeverMixContainers(t *testing.T) {
	g := geo(64*MiB, 64, 8, 8)
	es := genTrace([]int64{16 * MiB, 64 * MiB, 128 * MiB, 256 * MiB}, 24, 1, 0.1, 1)
	p := checkedReplay(t, es, g, "multi-log", defaultParams)
	l := p.(*sharedLog)
	assert.Check(t, is.Equal(l.nheads, 7)) // the open limit of 8, less the collector's head
	assert.Check(t, is.Len(l.failures, 0))
	assert.Check(t, is.Equal(l.dev.relocatedBytes, int64(0)))
	o, err := replay(es, g, "multi-log", defaultParams, false)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(o.Metrics.MixedZonesMax, 0))
	assert.Check(t, is.Equal(*o.Metrics.WriteAmplification, 1.0))
	assert.Check(t, o.Metrics.PeakOpen <= 8)
}

// Under pressure the multi-head log mixes fewer containers in a zone than
// the shared log, and stores every create as it does. (It relocates more
// here: the heads it goes on at when its own is full hold other
// containers' data, which dies at other times.)
func TestMultiLogMixesLessThanTheSharedLog(t *testing.T) {
	es := underPressure()
	shared := checkedReplay(t, es, defaultGeo, "shared-log", defaultParams).state()
	multi := checkedReplay(t, es, defaultGeo, "multi-log", defaultParams).state()
	assert.Check(t, multi.gcRuns > 0)
	assert.Check(t, is.Len(shared.failures, 0))
	assert.Check(t, is.Len(multi.failures, 0))
	assert.Check(t, multi.dev.mixed() < shared.dev.mixed())
}

func TestMultiLogOneHeadInterleavesLikeTheSharedLog(t *testing.T) {
	pp := params{Chunk: 256 * KiB, GCReserve: 1, Heads: 1}
	p := checkedReplay(t, halfLive[:2], small, "multi-log", pp)
	assert.Check(t, is.Equal(p.state().dev.mixed(), 2)) // a and b interleaved in zones 0 and 1
	pp.Heads = 2
	p = checkedReplay(t, halfLive[:2], geo(MiB, 4, 3, 3), "multi-log", pp)
	assert.Check(t, is.Equal(p.state().dev.mixed(), 0)) // a and b at heads of their own
}

func TestZoneAwareWholeDeletesRelocateNothingAndNeverMix(t *testing.T) {
	g := geo(64*MiB, 64, 8, 8)
	es := genTrace([]int64{16 * MiB, 64 * MiB, 128 * MiB, 256 * MiB}, 24, 1, 0.1, 1)
	p := checkedReplay(t, es, g, "zone-aware", defaultParams)
	assert.Check(t, is.Len(p.state().failures, 0))
	o, err := replay(es, g, "zone-aware", defaultParams, false)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(o.Metrics.RelocatedBytes, int64(0)))
	assert.Check(t, is.Equal(*o.Metrics.WriteAmplification, 1.0))
	assert.Check(t, is.Equal(o.Metrics.MixedZonesMax, 0))
	assert.Check(t, is.Equal(o.Metrics.GCRuns, 0))
	// Every deleted image gave back exactly the zones it took.
	zonesOf := map[key]int{}
	want := 0
	for _, e := range es {
		if e.Op == "create" {
			zonesOf[e.key()] = int((g.padded(e.Bytes) + g.ZoneCapacity - 1) / g.ZoneCapacity)
		} else {
			want += zonesOf[e.key()]
		}
	}
	assert.Check(t, is.Equal(o.Metrics.Resets, want))
}

func TestZoneAwareOnTheSharedLogsTrace(t *testing.T) {
	p := checkedReplay(t, halfLive, small, "zone-aware", params{Chunk: 256 * KiB, GCReserve: 2})
	b := p.state()
	assert.Check(t, is.Equal(b.dev.relocatedBytes, int64(0)))
	assert.Check(t, is.Equal(b.dev.m.Resets, 1))
	assert.Check(t, is.Len(b.failures, 0))
	for k, want := range map[key][]int{{"b", "cp0"}: {1}, {"c", "cp0"}: {0}, {"d", "cp0"}: {2}} {
		assert.Check(t, is.DeepEqual(b.images[k].zones, want), "%v", k)
	}
}

func TestZoneAwareOpenLimitHoldsConcurrentImagesBack(t *testing.T) {
	g := geo(MiB, 16, 2, 2)
	var es []event
	for i := range 5 {
		es = append(es, ev(0, "create", fmt.Sprint("c", i), "cp0", 3*MiB-4096))
	}
	p := checkedReplay(t, es, g, "zone-aware", params{Chunk: 256 * KiB, GCReserve: 2})
	b := p.state()
	assert.Check(t, is.Len(b.failures, 0))
	assert.Check(t, is.Equal(b.dev.m.MaxOpen, 2))
	assert.Check(t, is.Equal(b.dev.m.MaxActive, 2))
	assert.Check(t, is.Equal(b.dev.m.Finishes, 5)) // each image's last zone, 4 KiB short
	for _, im := range b.images {
		assert.Check(t, is.Len(im.zones, 3))
		var zs []int
		for _, x := range im.extents {
			zs = append(zs, x.zone)
		}
		assert.Check(t, is.DeepEqual(zs, im.zones)) // in order, contiguous
	}
}

func TestZoneAwareCapacityBelowZoneSize(t *testing.T) {
	g := geometry{ZoneSize: 64 * MiB, ZoneCapacity: 48 * MiB, Zones: 8, MaxOpen: 8, MaxActive: 8, Block: 4096}
	es := []event{ev(0, "create", "a", "cp0", 100*MiB), ev(0, "create", "b", "cp0", 96*MiB)}
	p := checkedReplay(t, es, g, "zone-aware", defaultParams)
	b := p.state()
	assert.Check(t, is.Len(b.images[key{"a", "cp0"}].zones, 3)) // not the 2 that 64 MiB zones would need
	assert.Check(t, is.Len(b.images[key{"b", "cp0"}].zones, 2))
	o, err := replay(es, g, "zone-aware", defaultParams, false)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(*o.Series.UtilUsed[len(o.Series.UtilUsed)-1], round4(196.0/(5*48))))
	s := checkedReplay(t, es, g, "shared-log", defaultParams).state()
	used := map[int]bool{}
	for _, im := range s.images {
		for _, x := range im.extents {
			used[x.zone] = true
		}
	}
	assert.Check(t, is.Len(used, 5))
}

func TestZoneAwareNotEnoughEmptyZonesFails(t *testing.T) {
	es := []event{ev(0, "create", "a", "cp0", 3*MiB), ev(0, "create", "b", "cp0", 2*MiB), ev(0, "create", "c", "cp0", MiB)}
	o, err := replay(es, small, "zone-aware", defaultParams, false)
	assert.NilError(t, err)
	assert.Assert(t, is.Len(o.Failures, 1))
	assert.Check(t, is.Equal(o.Failures[0].Container, "b"))
	assert.Check(t, is.Equal(o.Failures[0].Reason, "device full: needs 2 empty zones, 1 left"))
}

func TestZoneTailRelocatesNothingAndRoundsNothingUp(t *testing.T) {
	g := geo(64*MiB, 64, 8, 8)
	es := genTrace([]int64{16 * MiB, 64 * MiB, 128 * MiB, 256 * MiB}, 24, 1, 0.1, 1)
	b := checkedReplay(t, es, g, "zone-tail", defaultParams).state()
	assert.Check(t, is.Len(b.failures, 0))
	assert.Check(t, is.Equal(b.dev.relocatedBytes, int64(0)))
	assert.Check(t, is.Equal(b.gcRuns, 0))
	// Every byte written is an image's block-padded byte.
	var want int64
	for _, e := range es {
		want += g.padded(e.Bytes)
	}
	assert.Check(t, is.Equal(b.dev.hostBytes, want))
	assert.Check(t, b.dev.m.MaxOpen <= g.MaxOpen)
}

func TestZoneTailTailsShareAHeadAndGoWithTheirImages(t *testing.T) {
	g := geo(MiB, 6, 4, 4)
	es := []event{ev(0, "create", "a", "cp0", 3*MiB/2), ev(1, "create", "a", "cp1", 5*MiB/4), ev(2, "delete", "a", "cp0", 0)}
	p := checkedReplay(t, es[:2], g, "zone-tail", params{Chunk: 256 * KiB, GCReserve: 2})
	zt := p.(*zoneTail)
	head := zt.heads[0]
	assert.Check(t, is.Equal(zt.live[head], int64(3*MiB/4))) // both tails in one head zone
	assert.Check(t, is.Equal(zt.dev.countEmpty(), 3))
	assert.NilError(t, deleteImage(p, es[2]))
	assert.Check(t, is.Equal(zt.live[head], int64(MiB/4))) // cp1's tail keeps the head
	assert.Check(t, is.Equal(zt.dev.countEmpty(), 4))      // cp0's own zone reset at once
	assert.Check(t, is.Equal(zt.dev.m.Resets, 1))
	assert.NilError(t, deleteImage(p, ev(3, "delete", "a", "cp1", 0)))
	assert.Check(t, is.Equal(zt.dev.countEmpty(), 6))
	assert.Check(t, is.Len(zt.heads, 0))
}

func TestZoneTailATailFillsItsHeadThenGoesOn(t *testing.T) {
	g := geo(MiB, 6, 4, 4)
	es := []event{ev(0, "create", "a", "cp0", 3*MiB/4), ev(1, "create", "a", "cp1", MiB/2)}
	b := checkedReplay(t, es, g, "zone-tail", params{Chunk: 256 * KiB, GCReserve: 2}).state()
	var lens []int64
	for _, x := range b.images[key{"a", "cp1"}].extents {
		lens = append(lens, x.length)
	}
	slices.Sort(lens)
	assert.Check(t, is.DeepEqual(lens, []int64{MiB / 4, MiB / 4}))
	assert.Check(t, is.Equal(b.dev.m.FinishedUnwritten, int64(0)))
}

func TestZoneTailUnderPressure(t *testing.T) {
	b := checkedReplay(t, underPressure(), defaultGeo, "zone-tail", defaultParams).state()
	assert.Check(t, is.Equal(b.dev.relocatedBytes, int64(0)))
	assert.Check(t, b.dev.m.MaxOpen <= 8)
}

// The daemon's placement on the trace under pressure: nothing finished
// early or failed where the shared log fails nothing, less than a tenth of
// its relocation (the empty zone kept for relocations costs some: 0.3% of
// the bytes written), and its zones are used better than the logs'.
func TestZonePackUnderPressure(t *testing.T) {
	es := underPressure()
	b := checkedReplay(t, es, defaultGeo, "zone-pack", defaultParams).state()
	assert.Check(t, is.Len(b.failures, 0))
	assert.Check(t, is.Equal(b.dev.m.FinishedUnwritten, int64(0)))
	assert.Check(t, b.dev.m.MaxActive <= defaultGeo.MaxActive)
	pack, err := replay(es, defaultGeo, "zone-pack", defaultParams, false)
	assert.NilError(t, err)
	shared, err := replay(es, defaultGeo, "shared-log", defaultParams, false)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(shared.Metrics.Failed, 0))
	assert.Check(t, pack.Metrics.RelocatedBytes*10 < shared.Metrics.RelocatedBytes, "zone-pack relocated %d, the shared log %d", pack.Metrics.RelocatedBytes, shared.Metrics.RelocatedBytes)
	assert.Check(t, *pack.Metrics.UtilUsedMean > *shared.Metrics.UtilUsedMean)
	assert.Check(t, is.Equal(pack.Metrics.WastedBytes, shared.Metrics.WastedBytes), "the block padding only")
}

// Images taken together share heads for their tails, and their whole zones
// are their own.
func TestZonePackTailsOfImagesTakenTogether(t *testing.T) {
	g := geo(MiB, 8, 4, 8)
	es := []event{ev(0, "create", "a", "cp0", 5*MiB/2), ev(0, "create", "b", "cp0", MiB/4), ev(0, "create", "c", "cp0", MiB/8)}
	b := checkedReplay(t, es, g, "zone-pack", params{Chunk: 256 * KiB, GCReserve: 2}).state()
	assert.Check(t, is.Equal(g.Zones-b.dev.countEmpty(), 3), "2 zones of a's, and a head with the three tails")
	assert.Check(t, is.Equal(b.dev.mixed(), 1))
	assert.Check(t, is.Equal(b.dev.m.Finishes, 0))
}

// When a create does not fit, the live data of the zones with the least of
// it is relocated (and counted as such) rather than the create failing.
func TestZonePackRelocatesOnlyWhenACreateWouldFail(t *testing.T) {
	g := geo(MiB, 6, 4, 4)
	var es []event
	// Five zones, each a quarter a's and three quarters b's; then b's go.
	for i := range 5 {
		cp := fmt.Sprint("cp", i)
		es = append(es, ev(float64(i), "create", "a", cp, MiB/4), ev(float64(i), "create", "b", cp, 3*MiB/4))
	}
	for i := range 5 {
		es = append(es, ev(10, "delete", "b", fmt.Sprint("cp", i), 0))
	}
	es = append(es, ev(20, "create", "c", "cp0", 2*MiB))
	o, err := replay(es, g, "zone-pack", params{Chunk: 256 * KiB}, false)
	assert.NilError(t, err)
	assert.Check(t, is.Len(o.Failures, 0))
	assert.Check(t, o.Metrics.RelocatedBytes > 0)
	// Three zones' live data: the create takes two empty zones and leaves
	// the one kept for relocations.
	assert.Check(t, o.Metrics.RelocatedBytes <= 3*MiB/4, "%d relocated: more than three zones' live data", o.Metrics.RelocatedBytes)
	assert.Check(t, o.Metrics.GCRuns > 0)
	// Without the last create, nothing moves.
	o, err = replay(es[:len(es)-1], g, "zone-pack", params{Chunk: 256 * KiB}, false)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(o.Metrics.RelocatedBytes, int64(0)))
	checkedReplay(t, es, g, "zone-pack", params{Chunk: 256 * KiB})
	// Under a reserve of two zones the same create is refused up front:
	// the live data would take more than the four zones outside it.
	o, err = replay(es, g, "zone-pack", params{Chunk: 256 * KiB, GCReserve: 2}, false)
	assert.NilError(t, err)
	assert.Assert(t, len(o.Failures) > 0)
	for _, f := range o.Failures {
		assert.Check(t, is.Contains(f.Reason, "outside the GC reserve"))
	}
}

func TestOccupancyEveryZoneAtSpreadSteps(t *testing.T) {
	es := genTrace([]int64{16 * MiB, 64 * MiB, 128 * MiB, 256 * MiB}, 48, 3, 0.1, 1)
	for _, policy := range policies {
		o, err := replay(es, defaultGeo, policy, defaultParams, true)
		assert.NilError(t, err)
		steps := len(o.Series.TS)
		assert.Assert(t, steps > occupancySamples)
		assert.Check(t, is.Len(o.Series.ZoneTS, occupancySamples))
		assert.Check(t, is.Equal(o.Series.ZoneTS[0], o.Series.TS[0]))
		assert.Check(t, is.Equal(o.Series.ZoneTS[occupancySamples-1], o.Series.TS[steps-1]))
		for _, row := range o.Series.ZoneLivePct {
			assert.Assert(t, is.Len(row, defaultGeo.Zones))
			for _, v := range row {
				assert.Assert(t, -1 <= v && v <= 100)
			}
		}
		// The last state: empty zones are -1, the live bytes add up.
		last := o.Series.ZoneLivePct[len(o.Series.ZoneLivePct)-1]
		empty, pct := 0, 0
		for _, v := range last {
			if v == -1 {
				empty++
			} else {
				pct += v
			}
		}
		assert.Check(t, is.Equal(empty, defaultGeo.Zones-o.Series.UsedZones[steps-1]), policy)
		got := float64(pct) / 100 * float64(defaultGeo.ZoneCapacity)
		want := float64(o.Series.LiveBytes[steps-1])
		assert.Check(t, got > want-float64(defaultGeo.Zones)*float64(defaultGeo.ZoneCapacity)/200 &&
			got < want+float64(defaultGeo.Zones)*float64(defaultGeo.ZoneCapacity)/200, policy)
		o, err = replay(es, defaultGeo, policy, defaultParams, false)
		assert.NilError(t, err)
		assert.Check(t, o.Series.ZoneLivePct == nil)
	}
}

// A placement that breaks a rule of the device stops the replay with the
// model's error.
func TestDeviceRulesStopTheReplay(t *testing.T) {
	d := newDevice(geo(MiB, 4, 1, 1))
	_, err := d.append(0, 4096)
	assert.NilError(t, err)
	_, err = d.append(1, 4096)
	assert.Check(t, is.ErrorContains(err, "device: zone 1"))
	_, err = d.append(0, 100)
	assert.Check(t, err != nil, "a write of part of a block")
	assert.NilError(t, d.FinishZone(0))
	assert.Check(t, is.Equal(d.m.FinishedUnwritten, int64(MiB-4096)))
	_, err = d.append(0, 4096)
	assert.Check(t, is.ErrorContains(err, "full"))
}

const goodTrace = `time_s,op,container,checkpoint,bytes
0,create,a,cp0,1000
0,create,b,cp0,2000
5.5,delete,a,cp0,
6,delete,b,cp0,0
6,create,a,cp0,10
`

func TestTraceParsing(t *testing.T) {
	es, err := parseTrace(strings.NewReader(goodTrace), "t.csv")
	assert.NilError(t, err)
	assert.Assert(t, is.Len(es, 5))
	assert.Check(t, is.DeepEqual(es[2], event{TimeS: 5.5, Op: "delete", Container: "a", Checkpoint: "cp0", Line: 4}))
	assert.Check(t, is.Len(groups(es), 4))
	for _, c := range []struct{ from, to, want string }{
		{"time_s,op", "time,op", `t.csv:1: bad header`},
		{"5.5,delete", "5.5,remove", `t.csv:4: unknown op "remove"`},
		{"5.5,delete,a,cp0", "5.5,delete,a,cp9", `t.csv:4: delete of unknown checkpoint a/cp9`},
		{"0,create,b,cp0", "0,create,a,cp0", `t.csv:3: create of a/cp0, which already exists`},
		{"2000", "-2000", `t.csv:3: bytes: negative size`},
		{"2000", "2MiB", `t.csv:3: bytes: "2MiB" is not`},
		{"b,cp0,2000", "b,cp0,0", `t.csv:3: bytes: a create of 0`},
		{"6,delete,b,cp0,0", "6,delete,b,cp0,7", `t.csv:5: bytes: a delete takes no size`},
		{"6,delete", "5,delete", `t.csv:5: time goes backwards (5 after 5.5)`},
		{"5.5,", "x,", `t.csv:4: time_s: "x" is not a number`},
		{"0,create,a,cp0,1000", "0,create,a,1000", `t.csv:2: want 5 fields`},
	} {
		_, err := parseTrace(strings.NewReader(strings.Replace(goodTrace, c.from, c.to, 1)), "t.csv")
		assert.Check(t, is.ErrorContains(err, c.want))
	}
	hinted := "time_s,op,container,checkpoint,bytes,hint_s\n0,create,a,cp0,1000,600\n0,create,b,cp0,10,\n5,delete,a,cp0,,\n"
	es, err = parseTrace(strings.NewReader(hinted), "t.csv")
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual([]float64{es[0].Hint, es[1].Hint, es[0].Death, es[1].Death}, []float64{600, 0, 5, math.Inf(1)}))
	for _, c := range []struct{ from, to, want string }{
		{"1000,600", "1000,-1", `t.csv:2: hint_s: want a lifetime in seconds >= 0`},
		{"1000,600", "1000,NaN", `t.csv:2: hint_s: want a lifetime`},
		{"a,cp0,,", "a,cp0,,7", `t.csv:4: hint_s: a delete takes no hint`},
		{"1000,600", "1000", `t.csv:2: want 6 fields`},
	} {
		_, err := parseTrace(strings.NewReader(strings.Replace(hinted, c.from, c.to, 1)), "t.csv")
		assert.Check(t, is.ErrorContains(err, c.want))
	}
	_, err = parseTrace(strings.NewReader(""), "t.csv")
	assert.Check(t, is.ErrorContains(err, "t.csv:1: empty trace"))
	_, err = readTrace("/nonexistent/t.csv")
	assert.Check(t, is.ErrorContains(err, "/nonexistent/t.csv"))
}

func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.csv")
	var b strings.Builder
	b.WriteString("time_s,op,container,checkpoint,bytes\n")
	for _, e := range genTrace([]int64{16 * MiB, 64 * MiB}, 5, 2, 0, 1) {
		size := ""
		if e.Op == "create" {
			size = fmt.Sprint(e.Bytes)
		}
		fmt.Fprintf(&b, "%g,%s,%s,%s,%s\n", e.TimeS, e.Op, e.Container, e.Checkpoint, size)
	}
	assert.NilError(t, os.WriteFile(trace, []byte(b.String()), 0o644))
	var out, errs bytes.Buffer
	assert.NilError(t, run([]string{"--trace", trace, "--zone-size", "64MiB", "--zones", "32", "--occupancy"}, &out, &errs))
	var doc document
	assert.NilError(t, json.Unmarshal(out.Bytes(), &doc))
	var got []string
	for _, o := range doc.Outcomes {
		got = append(got, o.Policy)
		assert.Check(t, len(o.Series.ZoneLivePct) > 0)
	}
	assert.Check(t, is.DeepEqual(got, policies))
	assert.Check(t, is.Equal(doc.Geometry.Zones, 32))
	// The metrics come in the report's order.
	var raw struct {
		Outcomes []map[string]json.RawMessage `json:"outcomes"`
	}
	assert.NilError(t, json.Unmarshal(out.Bytes(), &raw))
	m := string(raw.Outcomes[0]["metrics"])
	assert.Check(t, strings.Index(m, `"creates"`) < strings.Index(m, `"peak_active"`))

	out.Reset()
	js := filepath.Join(dir, "o.json")
	assert.NilError(t, run([]string{"--trace", trace, "--policy", "zone-pack", "--json", js}, &out, &errs))
	assert.Check(t, is.Equal(out.Len(), 0))
	data, err := os.ReadFile(js)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(data), `"policy":"zone-pack"`))

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", filepath.Join(dir, "missing.csv")}, "missing.csv"},
		{[]string{}, "--trace is required"},
		{[]string{"--trace", trace, "--zone-size", "64 MiB"}, "bad size"},
		{[]string{"--trace", trace, "--policy", "log"}, `unknown policy "log"`},
		{[]string{"--trace", trace, "--heads", "9"}, "heads: want 0 (as many as the open limit allows) to 7"},
		{[]string{"--trace", trace, "--zone-capacity", "65MiB"}, "exceeds the zone size"},
	} {
		err := run(c.args, &out, &errs)
		assert.Check(t, is.ErrorContains(err, c.want), "%v", c.args)
		if c.want != "missing.csv" {
			assert.Check(t, errors.Is(err, errUsage), "%v", c.args)
		}
	}
}

// FuzzParseTrace: any input is a trace or an error naming the file, never
// a panic; a trace's creates die (if at all) no earlier than they are made,
// and its hints are lifetimes >= 0.
func FuzzParseTrace(f *testing.F) {
	f.Add(goodTrace)
	f.Add("time_s,op,container,checkpoint,bytes,hint_s\n0,create,a,cp0,1000,600\n5,delete,a,cp0,,\n")
	f.Add("time_s,op,container,checkpoint,bytes,hint_s\n0,create,a,cp0,1000,1e400\n")
	f.Fuzz(func(t *testing.T, text string) {
		es, err := parseTrace(strings.NewReader(text), "t.csv")
		if err != nil {
			assert.Check(t, strings.HasPrefix(err.Error(), "t.csv"), err.Error())
			return
		}
		for _, e := range es {
			if e.Op == "create" {
				assert.Check(t, e.Death >= e.TimeS, "%+v", e)
				assert.Check(t, e.Hint >= 0 && !math.IsInf(e.Hint, 0), "%+v", e)
			}
		}
	})
}
