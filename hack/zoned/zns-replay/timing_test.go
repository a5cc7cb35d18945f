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
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// The time model (timing.go): per-zone and device bandwidth, reads of the
// collector, resets, and what they make of a create's latency and stall.

const (
	zoneBW = 100e6 // bytes/s
	mib    = float64(MiB)
)

func timed(c costs) params {
	pp := params{Chunk: MiB, GCReserve: 0, Cleaner: "greedy", Costs: c}
	return pp
}

func timedReplay(t *testing.T, events []event, g geometry, policy string, pp params) *outcome {
	t.Helper()
	o, err := replay(events, g, policy, pp, false)
	assert.NilError(t, err)
	return o
}

// near says whether the model's x (rounded to microseconds) is want.
func near(x *float64, want float64) bool {
	return x != nil && math.Abs(*x-want) <= 1e-6
}

func TestTimeOneCreateTakesItsBytesOverTheZonesBandwidth(t *testing.T) {
	events := []event{ev(10, "create", "a", "cp0", 10*MiB)}
	pp := timed(costs{WriteBW: 4 * zoneBW, ZoneBW: zoneBW, ReadBW: 4 * zoneBW})
	for _, p := range policies {
		o := timedReplay(t, events, geo(64*MiB, 8, 4, 4), p, pp)
		m := o.Metrics
		want := 10 * mib / zoneBW
		assert.Check(t, near(m.LatencyP50S, want), "%s: %v, want %g", p, *m.LatencyP50S, want)
		assert.Check(t, near(m.LatencyMaxS, want), "%s", p)
		assert.Check(t, near(m.StallTotalS, 0), "%s", p)
		assert.Check(t, is.Equal(*m.StalledCreates, 0), "%s", p)
	}
}

// Zones written at once append in parallel until the device's bandwidth
// is reached, then share it; one zone written by two streams is shared by
// them.
func TestTimeActiveZonesWriteInParallelUpToTheDevice(t *testing.T) {
	events := []event{ev(0, "create", "a", "cp0", 8*MiB), ev(0, "create", "b", "cp0", 8*MiB)}
	g := geo(64*MiB, 8, 4, 4)
	for _, c := range []struct {
		name     string
		policy   string
		writeBW  float64
		p50, max float64 // in MiB at the zone's bandwidth
	}{
		// Each image at a head of its own: both zones at full speed.
		{"two heads, a device of four zones' speed", "multi-log", 4 * zoneBW, 8, 8},
		// The same, on a device no faster than a zone: they share it.
		{"two heads, a device of one zone's speed", "multi-log", zoneBW, 16, 16},
		// One head: the zone is the bottleneck, whatever the device.
		{"one head", "shared-log", 4 * zoneBW, 16, 16},
		// A device of one and a half zones: each gets three quarters.
		{"two heads, a device of 1.5 zones' speed", "multi-log", 1.5 * zoneBW, 8 / 0.75, 8 / 0.75},
	} {
		o := timedReplay(t, events, g, c.policy, timed(costs{WriteBW: c.writeBW, ZoneBW: zoneBW}))
		m := o.Metrics
		assert.Check(t, near(m.LatencyP50S, c.p50*mib/zoneBW), "%s: p50 %v, want %g", c.name, *m.LatencyP50S, c.p50*mib/zoneBW)
		assert.Check(t, near(m.LatencyMaxS, c.max*mib/zoneBW), "%s: max %v, want %g", c.name, *m.LatencyMaxS, c.max*mib/zoneBW)
	}
	// A stream that starts while another writes shares the device from
	// then on: b (at 0.04 s) takes the device's half, a the rest.
	events = []event{ev(0, "create", "a", "cp0", 8*MiB), ev(0.04, "create", "b", "cp0", 2*MiB)}
	o := timedReplay(t, events, g, "multi-log", timed(costs{WriteBW: zoneBW, ZoneBW: zoneBW}))
	// a: 4 MB alone by 0.04 s, then both at half; b's 2 MiB end at 0.04 + 2 MiB / (zoneBW/2).
	bEnd := 0.04 + 2*mib/(zoneBW/2)
	aEnd := bEnd + (8*mib-0.04*zoneBW-2*mib)/zoneBW
	assert.Check(t, near(o.Metrics.LatencyMaxS, aEnd), "%v, want %g", *o.Metrics.LatencyMaxS, aEnd)
	assert.Check(t, near(o.Metrics.LatencyP50S, bEnd-0.04), "%v, want %g", *o.Metrics.LatencyP50S, bEnd-0.04)
}

// A policy that writes one image at a time (zone-aware on one open zone)
// starts the second when the first is done: its latency is both.
func TestTimeAnImageWaitingForAStreamSlotWaits(t *testing.T) {
	events := []event{ev(0, "create", "a", "cp0", 8*MiB), ev(0, "create", "b", "cp0", 8*MiB)}
	o := timedReplay(t, events, geo(64*MiB, 8, 1, 1), "zone-aware", timed(costs{WriteBW: 4 * zoneBW, ZoneBW: zoneBW}))
	assert.Check(t, near(o.Metrics.LatencyP50S, 8*mib/zoneBW), "%v", *o.Metrics.LatencyP50S)
	assert.Check(t, near(o.Metrics.LatencyMaxS, 16*mib/zoneBW), "%v", *o.Metrics.LatencyMaxS)
}

// The shared log relocates before a create that would not fit: the read,
// the copy and the reset are that create's stall, and in its latency;
// zone-aware placement on the same trace stalls nowhere.
func TestTimeRelocationIsTheStallOfTheCreateThatNeededIt(t *testing.T) {
	const reset = 0.005
	events := []event{
		ev(0, "create", "a", "cp0", 3*MiB), // zone 0 ...
		ev(1, "create", "b", "cp0", 1*MiB), // ... full, with b's 1 MiB
		ev(2, "create", "c", "cp0", 4*MiB), // zone 1
		ev(3, "create", "d", "cp0", 4*MiB), // zone 2
		ev(4, "create", "e", "cp0", 4*MiB), // zone 3; zone 4 empty
		ev(5, "delete", "a", "cp0", 0),     // zone 0: 3 MiB dead, 1 live
		ev(6, "create", "f", "cp0", 5*MiB), // fits only if zone 0 is cleaned
	}
	g := geo(4*MiB, 5, 4, 4)
	c := costs{WriteBW: 4 * zoneBW, ZoneBW: zoneBW, ReadBW: 2 * zoneBW, ResetS: reset}
	o := timedReplay(t, events, g, "shared-log", timed(c))
	m := o.Metrics
	assert.Assert(t, is.Equal(m.Failed, 0))
	assert.Assert(t, is.Equal(m.RelocatedBytes, int64(MiB)))
	stall := mib/(2*zoneBW) + mib/zoneBW + reset // read b, write it at the collector's head, reset zone 0
	assert.Check(t, is.Equal(*m.StalledCreates, 1))
	assert.Check(t, near(m.StallMaxS, stall), "stall %v, want %g", *m.StallMaxS, stall)
	assert.Check(t, near(m.StallTotalS, stall), "%v", *m.StallTotalS)
	assert.Check(t, near(m.LatencyMaxS, stall+5*mib/zoneBW), "latency %v, want %g", *m.LatencyMaxS, stall+5*mib/zoneBW)

	o = timedReplay(t, events, g, "zone-aware", timed(c))
	assert.Check(t, is.Equal(*o.Metrics.StalledCreates, 0))
	assert.Check(t, near(o.Metrics.StallMaxS, 0))
}

// A delete's resets take their time on the delete, not on a create.
func TestTimeResetsOfADeleteAreNotACreatesStall(t *testing.T) {
	events := []event{
		ev(0, "create", "a", "cp0", 4*MiB),
		ev(10, "delete", "a", "cp0", 0),
		ev(10.5, "create", "b", "cp0", 4*MiB),
	}
	o := timedReplay(t, events, geo(4*MiB, 4, 2, 2), "zone-aware", timed(costs{WriteBW: zoneBW, ResetS: 1}))
	assert.Check(t, near(o.Metrics.LatencyMaxS, 4*mib/zoneBW), "%v", *o.Metrics.LatencyMaxS)
	assert.Check(t, near(o.Metrics.StallTotalS, 0))
}

func TestTimeModelOffReportsNoLatency(t *testing.T) {
	o := timedReplay(t, underPressure(), defaultGeo, "zone-pack", defaultParams)
	assert.Check(t, o.Metrics.LatencyP50S == nil)
	data, err := json.Marshal(o.Metrics)
	assert.NilError(t, err)
	assert.Check(t, !strings.Contains(string(data), "latency"), "%s", data)
}

func TestTimeCommandLine(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.csv")
	assert.NilError(t, os.WriteFile(trace, []byte("time_s,op,container,checkpoint,bytes\n0,create,a,cp0,"+fmt.Sprint(10*MiB)+"\n"), 0o644))
	var out, errs bytes.Buffer
	assert.NilError(t, run([]string{"--trace", trace, "--policy", "zone-pack", "--write-bw", "400MB/s", "--zone-bw", "100MB", "--reset-time", "5ms"}, &out, &errs))
	var doc struct {
		Placement params `json:"placement"`
		Outcomes  []struct {
			Metrics map[string]any `json:"metrics"`
		} `json:"outcomes"`
	}
	assert.NilError(t, json.Unmarshal(out.Bytes(), &doc))
	assert.Check(t, is.DeepEqual(doc.Placement.Costs, costs{WriteBW: 400e6, ZoneBW: 100e6, ResetS: 0.005}))
	assert.Check(t, is.Equal(doc.Outcomes[0].Metrics["create_latency_p99_s"], roundUS(10*mib/100e6)))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--zone-bw", "100MB"}, "need the device's bandwidth"},
		{[]string{"--write-bw", "100MB", "--zone-bw", "200MB"}, "cannot append faster than the device"},
		{[]string{"--write-bw", "-1MB"}, "bad bandwidth"},
		{[]string{"--write-bw", "100MB", "--reset-time", "-1ms"}, "reset-time: want a finite value >= 0"},
	} {
		err := run(append([]string{"--trace", trace}, c.args...), &out, &errs)
		assert.Check(t, is.ErrorContains(err, c.want), "%v", c.args)
		assert.Check(t, errors.Is(err, errUsage), "%v", c.args)
	}
}

// Far into a trace the clock's resolution is coarser than what is left of
// an operation: the run ends all the same, and every create takes at least
// its bytes at the device's bandwidth.
func TestTimeEndsFarIntoATrace(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	var events []event
	for i := range 200 {
		at := 3e7 + float64(i)*0.0371
		events = append(events, ev(at, "create", fmt.Sprint("c", i%9), fmt.Sprint("cp", i), int64(1+rng.Intn(40*MiB))))
	}
	pp := timed(costs{WriteBW: 2e9, ZoneBW: 1e9 / 3, ReadBW: 3.2e9, ResetS: 0.0037})
	done := make(chan *outcome, 1)
	go func() {
		o, err := replay(events, geo(64*MiB, 200, 14, 14), "multi-log", pp, false)
		assert.Check(t, err)
		done <- o
	}()
	select {
	case o := <-done:
		assert.Assert(t, o != nil)
		assert.Check(t, *o.Metrics.LatencyP50S > 0)
	case <-time.After(20 * time.Second):
		t.Fatal("the time model did not end")
	}
}
