// Command zns-replay replays a trace of checkpoint creates and deletes on a
// model of a zoned (ZNS) device under placement policies and writes each
// policy's metrics, failed creates and time series as JSON: the replayer
// behind the harness's zns suites (hack/ab/zns.py runs it).
//
// The device is the daemon's own model (daemon/internal/zoned.Model) and
// the policy zone-pack is the daemon's own placement (zoned.Placer); the
// others are the baselines it is measured against (baselines.go). The
// command is built inside the patched moby tree (hack/zoned/zns-replay.sh), which
// is what lets it import the daemon's internal package.
//
//	zns-replay --trace FILE [--zone-size 64MiB --zone-capacity 64MiB --zones 32 --max-open 8 --max-active 8 --block 4KiB]
//	           [--chunk 1MiB --gc-reserve 2 --heads 0 --cleaner greedy] [--policy NAME ...] [--occupancy] [--json FILE]
//	           [--write-bw 2000MB --zone-bw 2000MB --read-bw 3200MB --reset-time 5ms --finish-time 0s]
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// policies, in the order the harness lists them. A log's "-idle" variant
// also cleans while the device is idle (sharedLog.cleanIdle).
var policies = []string{"shared-log", "zone-aware", "multi-log", "zone-tail", "zone-pack", "hint-log", "oracle",
	"shared-log-idle", "multi-log-idle", "hint-log-idle", "oracle-idle"}

func newPlacement(policy string, g geometry, pp params) (placement, error) {
	switch policy {
	case "shared-log":
		return newSharedLog(g, pp), nil
	case "multi-log":
		return newMultiLog(g, pp), nil
	case "hint-log":
		return newHintLog(g, pp), nil
	case "oracle":
		return newOracle(g, pp), nil
	case "zone-aware":
		return newZoneAware(g), nil
	case "zone-tail":
		return newZoneTail(g), nil
	case "zone-pack":
		return newZonePack(g, pp)
	case "shared-log-idle":
		return idleLog(newSharedLog(g, pp)), nil
	case "multi-log-idle":
		return idleLog(newMultiLog(g, pp)), nil
	case "hint-log-idle":
		return idleLog(newHintLog(g, pp)), nil
	case "oracle-idle":
		return idleLog(newOracle(g, pp)), nil
	}
	return nil, fmt.Errorf("unknown policy %q (want one of %s)", policy, strings.Join(policies, ", "))
}

type document struct {
	Geometry  geometry   `json:"geometry"`
	Placement params     `json:"placement"`
	Outcomes  []*outcome `json:"outcomes"`
}

var sizeRE = regexp.MustCompile(`^(\d+(?:\.\d+)?)(B|KiB|MiB|GiB|KB|MB|GB)?$`)

var sizeUnits = map[string]float64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 1e3, "MB": 1e6, "GB": 1e9}

// sizeFlag is a size in bytes, given as bytes or as 512KiB, 64MiB, ...
type sizeFlag struct{ v *int64 }

func (s sizeFlag) String() string {
	if s.v == nil {
		return ""
	}
	return strconv.FormatInt(*s.v, 10)
}

func (s sizeFlag) Set(text string) error {
	m := sizeRE.FindStringSubmatch(text)
	if m == nil {
		return fmt.Errorf("bad size %q (want e.g. 4096, 512KiB, 64MiB)", text)
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	*s.v = int64(f * sizeUnits[m[2]])
	return nil
}

// rateFlag is a bandwidth in bytes per second, given as a size (2000MB,
// 250MiB, with or without /s).
type rateFlag struct{ v *float64 }

func (r rateFlag) String() string {
	if r.v == nil {
		return ""
	}
	return strconv.FormatFloat(*r.v, 'g', -1, 64)
}

func (r rateFlag) Set(text string) error {
	var n int64
	if err := (sizeFlag{&n}).Set(strings.TrimSuffix(text, "/s")); err != nil {
		return fmt.Errorf("bad bandwidth %q (want e.g. 2000MB or 250MiB, per second)", text)
	}
	*r.v = float64(n)
	return nil
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "zns-replay: %v\n", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }
func (u usageError) Unwrap() error { return errUsage }

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("zns-replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g := geometry{ZoneSize: 64 * MiB, ZoneCapacity: 64 * MiB, Zones: 32, MaxOpen: 8, MaxActive: 8, Block: 4096}
	pp := params{Chunk: MiB, GCReserve: 2, Cleaner: "greedy"}
	trace := fs.String("trace", "", "the trace: a CSV of "+strings.Join(traceHeader, ","))
	fs.Var(sizeFlag{&g.ZoneSize}, "zone-size", "zone size")
	fs.Var(sizeFlag{&g.ZoneCapacity}, "zone-capacity", "writable bytes of a zone (at most its size)")
	fs.IntVar(&g.Zones, "zones", g.Zones, "number of zones")
	fs.IntVar(&g.MaxOpen, "max-open", g.MaxOpen, "open zones at once (0: no limit)")
	fs.IntVar(&g.MaxActive, "max-active", g.MaxActive, "active zones at once (0: no limit)")
	fs.Var(sizeFlag{&g.Block}, "block", "logical block size")
	fs.Var(sizeFlag{&pp.Chunk}, "chunk", "interleaving unit of concurrent images")
	fs.IntVar(&pp.GCReserve, "gc-reserve", pp.GCReserve, "the reserve (0 to zones-1): live data never exceeds the capacity of all zones but these, under every policy that relocates")
	fs.StringVar(&pp.Cleaner, "cleaner", pp.Cleaner, "the logs' victim rule: "+strings.Join(cleaners, " or "))
	fs.IntVar(&pp.Heads, "heads", 0, "the multi-head log's host heads (0: the open limit less one)")
	fs.Var(rateFlag{&pp.Costs.WriteBW}, "write-bw", "time model: the device's append bandwidth, all zones together, per second (0: no time model)")
	fs.Var(rateFlag{&pp.Costs.ZoneBW}, "zone-bw", "time model: one zone's append bandwidth per second (0: the device's)")
	fs.Var(rateFlag{&pp.Costs.ReadBW}, "read-bw", "time model: the device's read bandwidth per second (0: as write-bw)")
	resetTime := fs.Duration("reset-time", 0, "time model: how long a zone reset takes")
	finishTime := fs.Duration("finish-time", 0, "time model: how long a zone finish takes")
	var pols listFlag
	fs.Var(&pols, "policy", "a policy to replay (repeatable; default: all of "+strings.Join(policies, ", ")+")")
	occupancy := fs.Bool("occupancy", false, "keep every zone's live data over the trace (zone_t_s, zone_live_pct)")
	out := fs.String("json", "-", "where to write the JSON (-: standard output)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *trace == "" {
		return usageError{"--trace is required"}
	}
	pp.Costs.ResetS, pp.Costs.FinishS = resetTime.Seconds(), finishTime.Seconds()
	if probs := append(g.problems(), pp.problems(g)...); len(probs) > 0 {
		return usageError{"--" + strings.Join(probs, "; --")}
	}
	if len(pols) == 0 {
		pols = policies
	}
	for _, p := range pols {
		if _, err := newPlacement(p, g, pp); err != nil {
			return usageError{err.Error()}
		}
	}
	events, err := readTrace(*trace)
	if err != nil {
		return err
	}
	doc := document{Geometry: g, Placement: pp}
	for _, p := range pols {
		o, err := replay(events, g, p, pp, *occupancy)
		if err != nil {
			return err
		}
		doc.Outcomes = append(doc.Outcomes, o)
	}
	w := stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	return json.NewEncoder(w).Encode(doc)
}
