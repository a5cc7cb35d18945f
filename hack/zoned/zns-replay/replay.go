package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/v2/daemon/internal/zoned"
)

const MiB = 1 << 20

// geometry is a zoned device as the harness describes it (hack/ab/zns.py's
// Geometry, field for field).
type geometry struct {
	ZoneSize     int64 `json:"zone_size"`
	ZoneCapacity int64 `json:"zone_capacity"`
	Zones        int   `json:"zones"`
	MaxOpen      int   `json:"max_open"`
	MaxActive    int   `json:"max_active"`
	Block        int64 `json:"block"`
}

func (g geometry) zoned() zoned.Geometry {
	return zoned.Geometry{ZoneSize: g.ZoneSize, Zones: g.Zones, MaxOpen: g.MaxOpen, MaxActive: g.MaxActive, BlockSize: g.Block}
}

func (g geometry) capacity() int64 { return int64(g.Zones) * g.ZoneCapacity }

// padded is what a write of n bytes takes on the device: whole blocks.
func (g geometry) padded(n int64) int64 { return (n + g.Block - 1) / g.Block * g.Block }

// problems says why g is no device.
func (g geometry) problems() []string {
	var out []string
	if g.Block < 512 || g.Block&(g.Block-1) != 0 {
		out = append(out, fmt.Sprintf("block: want a power of two >= 512 bytes, got %d", g.Block))
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"zone-size", g.ZoneSize}, {"zone-capacity", g.ZoneCapacity}} {
		if f.v <= 0 || (g.Block > 0 && f.v%g.Block != 0) {
			out = append(out, fmt.Sprintf("%s: want a positive multiple of the block size (%d), got %d", f.name, g.Block, f.v))
		}
	}
	if g.ZoneCapacity > g.ZoneSize {
		out = append(out, fmt.Sprintf("zone-capacity: capacity %s exceeds the zone size %s", humanSize(g.ZoneCapacity), humanSize(g.ZoneSize)))
	}
	if g.Zones < 1 {
		out = append(out, fmt.Sprintf("zones: want at least one zone, got %d", g.Zones))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"max-open", g.MaxOpen}, {"max-active", g.MaxActive}} {
		if f.v < 0 || f.v > g.Zones {
			out = append(out, fmt.Sprintf("%s: want 0 (no limit) to %d zones, got %d", f.name, g.Zones, f.v))
		}
	}
	if g.MaxOpen > 0 && g.MaxActive > 0 && g.MaxOpen > g.MaxActive {
		out = append(out, fmt.Sprintf("max-open: %d open zones exceed %d active ones (an open zone is active)", g.MaxOpen, g.MaxActive))
	}
	return out
}

// params are the placements' parameters.
type params struct {
	Chunk     int64  `json:"chunk"`      // concurrent images are interleaved in chunks of this
	GCReserve int    `json:"gc_reserve"` // the reserve: zones' capacity live data may not take (reserve.go)
	Heads     int    `json:"heads"`      // the multi-head logs' host heads; 0: the open limit less one
	Cleaner   string `json:"cleaner"`    // the logs' victim rule: greedy or cost-benefit
	Costs     costs  `json:"costs"`      // the device's time model (timing.go)
}

// cleaners are the victim rules of the logs' collector (cleaner.go).
var cleaners = []string{"greedy", "cost-benefit"}

// problems says why p does not fit g.
func (p params) problems(g geometry) []string {
	var out []string
	if p.Heads < 0 || p.Heads > maxHeads(g) {
		out = append(out, fmt.Sprintf("heads: want 0 (as many as the open limit allows) to %d (the open limit less the collector's head), got %d", maxHeads(g), p.Heads))
	}
	if p.Chunk <= 0 || p.Chunk%g.Block != 0 {
		out = append(out, fmt.Sprintf("chunk: want a positive multiple of the block size (%d), got %d", g.Block, p.Chunk))
	}
	if p.GCReserve < 0 || p.GCReserve >= g.Zones {
		out = append(out, fmt.Sprintf("gc-reserve: want 0 to %d zones, got %d", g.Zones-1, p.GCReserve))
	}
	out = append(out, p.Costs.problems()...)
	if !slices.Contains(cleaners, p.Cleaner) {
		out = append(out, fmt.Sprintf("cleaner: want one of %s, got %q", strings.Join(cleaners, ", "), p.Cleaner))
	}
	return out
}

// image is one checkpoint image: where its bytes are and, while it is being
// written, how many are still to come.
type image struct {
	container, checkpoint string
	created               float64
	hint                  float64 // the lifetime the trace declares (0: none)
	death                 float64 // when it is deleted (the oracle's knowledge)
	bytes, padded         int64
	remaining             int64
	extents               []*extent
	job                   *job // what it does to the device, for the time model

	zones   []int         // zone-aware, zone-tail: the zones it owns, in order
	tail    []tailPart    // zone-tail: where its tail goes
	dropped []int         // zone-tail: the zones it had bytes in
	stream  *zoned.Stream // zone-pack
}

func (im *image) key() key { return key{im.container, im.checkpoint} }

// extent is a run of an image's bytes in one zone.
type extent struct {
	zone        int
	off, length int64
	seq         int64 // when it was written, for the order a collector copies a zone's extents in
	im          *image
}

// failure is a create that failed: why, and what the device held then
// (the written bytes no longer live, which relocation could have freed,
// and the empty zones), so that a failure can be told from a full device.
type failure struct {
	TimeS      float64 `json:"time_s"`
	Container  string  `json:"container"`
	Checkpoint string  `json:"checkpoint"`
	Bytes      int64   `json:"bytes"`
	Reason     string  `json:"reason"`
	DeadBytes  int64   `json:"dead_bytes"`
	EmptyZones int     `json:"empty_zones"`
}

// errNoSpace fails an image's write: it found no zone to go to.
var errNoSpace = errors.New("no space")

// placement is a policy: where images go. base keeps what they share.
type placement interface {
	state() *base
	// admit returns why im cannot be written ("": it can); an error is a
	// failure of the replay, not of the create.
	admit(im *image) (string, error)
	// streams is how many images may be written at once (0: no limit).
	streams() int
	// admitOnStart says whether an image is admitted when it starts to be
	// written (as the daemon's store plans a stream when it gets a turn)
	// rather than with the other creates of its group, up front.
	admitOnStart() bool
	// ready says whether put would write some of im now (a policy whose
	// streams may wait for each other says no while im waits).
	ready(im *image) bool
	// put writes the next n bytes of im and returns how many it wrote;
	// errNoSpace (wrapped) if there is no room for them.
	put(im *image, n int64) (int64, error)
	complete(im *image) error
	// drop makes im's bytes dead (a failed create, or a delete before
	// deleted).
	drop(im *image) error
	deleted(im *image) error
}

// base is what every placement has: the device, the images, which zone
// holds which live bytes, the counters.
type base struct {
	g        geometry
	dev      *device
	images   map[key]*image // the complete ones
	failures []failure
	live     []int64
	written  []float64 // when each zone was last written (the cost-benefit cleaner's age)
	held     []map[*extent]bool
	inFlight []*image
	seq      int64
	gcRuns   int
	stored   int64 // the trace's bytes of the images written whole
	now      float64
}

func newBase(g geometry) *base {
	b := &base{g: g, dev: newDevice(g), images: map[key]*image{}, live: make([]int64, g.Zones), written: make([]float64, g.Zones), held: make([]map[*extent]bool, g.Zones)}
	for i := range b.held {
		b.held[i] = map[*extent]bool{}
	}
	return b
}

func (b *base) state() *base { return b }

// write appends n bytes of im at zone's write pointer.
func (b *base) write(im *image, zone int, n int64, gc bool) error {
	b.dev.writer, b.dev.gc = im.container, gc
	off, err := b.dev.append(zone, n)
	if err != nil {
		return err
	}
	b.record(im, zone, off, n)
	return nil
}

// record notes that n bytes of im are at off in zone.
func (b *base) record(im *image, zone int, off, n int64) {
	if k := len(im.extents); k > 0 && im.extents[k-1].zone == zone && im.extents[k-1].off+im.extents[k-1].length == off {
		im.extents[k-1].length += n
	} else {
		b.seq++
		x := &extent{zone: zone, off: off, length: n, seq: b.seq, im: im}
		im.extents = append(im.extents, x)
		b.held[zone][x] = true
	}
	b.live[zone] += n
	b.written[zone] = b.now
}

// moved replaces im's extent x, whose bytes were relocated, by the extents
// they went to (offsets on the device), in its place in im's order.
func (b *base) moved(im *image, x *extent, to []zoned.Extent) {
	i := slices.Index(im.extents, x)
	var repl []*extent
	for _, y := range to {
		b.seq++
		n := &extent{zone: y.Zone, off: y.Offset - int64(y.Zone)*b.g.ZoneSize, length: y.Length, seq: b.seq, im: im}
		b.held[y.Zone][n] = true
		b.live[y.Zone] += y.Length
		b.written[y.Zone] = b.now
		repl = append(repl, n)
	}
	im.extents = slices.Replace(im.extents, i, i+1, repl...)
	delete(b.held[x.zone], x)
	b.live[x.zone] -= x.length
}

// dropExtents makes im's bytes dead: they stay in their zones until a reset.
func (b *base) dropExtents(im *image) {
	for _, x := range im.extents {
		b.live[x.zone] -= x.length
		delete(b.held[x.zone], x)
	}
	im.extents = nil
}

// heldInOrder are zone's live extents in the order they were written.
func (b *base) heldInOrder(zone int) []*extent {
	out := make([]*extent, 0, len(b.held[zone]))
	for x := range b.held[zone] {
		out = append(out, x)
	}
	slices.SortFunc(out, func(a, b *extent) int { return int(a.seq - b.seq) })
	return out
}

func (b *base) reset(zone int) error {
	if b.live[zone] != 0 {
		return fmt.Errorf("zone %d: reset with %d live bytes", zone, b.live[zone])
	}
	return b.dev.ResetZone(zone)
}

func (b *base) fail(im *image, why string) {
	var dead int64
	for z := range b.g.Zones {
		dead += b.dev.wp[z] - b.live[z]
	}
	b.failures = append(b.failures, failure{b.now, im.container, im.checkpoint, im.bytes, why, dead, b.dev.countEmpty()})
}

func (b *base) removeInFlight(im *image) {
	if i := slices.Index(b.inFlight, im); i >= 0 {
		b.inFlight = slices.Delete(b.inFlight, i, i+1)
	}
}

// createGroup writes creates taken together: every image is a stream, and
// the streams' chunks are written round-robin, as concurrent writers' would
// arrive, at most streams() at once.
func createGroup(p placement, events []event, chunk int64) error {
	b := p.state()
	admit := func(im *image) (bool, error) {
		why, err := p.admit(im)
		if err != nil {
			return false, fmt.Errorf("%s/%s at %ss: %w", im.container, im.checkpoint, fmtG(b.now), err)
		}
		if why != "" {
			b.fail(im, why)
			return false, nil
		}
		b.inFlight = append(b.inFlight, im)
		return true, nil
	}
	var waiting []*image
	for _, e := range events {
		b.now = e.TimeS
		im := &image{container: e.Container, checkpoint: e.Checkpoint, created: e.TimeS, hint: e.Hint, bytes: e.Bytes, padded: b.g.padded(e.Bytes)}
		im.death = e.Death
		im.remaining = im.padded
		if !p.admitOnStart() {
			im.job = b.dev.clk.start(e.TimeS, nil)
			if ok, err := admit(im); err != nil || !ok {
				if err != nil {
					return err
				}
				continue
			}
		}
		waiting = append(waiting, im)
	}
	var running []*image
	// The streams that ended, whose slots the images that wait for one
	// take (a policy writing at most streams() at once), in turn.
	var freed []*job
	end := func(im *image) {
		if p.streams() > 0 && im.job != nil {
			freed = append(freed, im.job)
		}
	}
	defer b.dev.clk.on(nil)
	for len(waiting) > 0 || len(running) > 0 {
		for len(waiting) > 0 && (p.streams() == 0 || len(running) < p.streams()) {
			im := waiting[0]
			waiting = waiting[1:]
			var after *job
			if len(freed) > 0 {
				after, freed = freed[0], freed[1:]
			}
			if im.job == nil {
				im.job = b.dev.clk.start(im.created, after)
			} else {
				im.job.after = after
			}
			b.dev.clk.on(im.job)
			if p.admitOnStart() {
				ok, err := admit(im)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
			}
			running = append(running, im)
		}
		progress := false
		for _, im := range slices.Clone(running) {
			if !p.ready(im) {
				continue
			}
			progress = true
			b.dev.clk.on(im.job)
			n, err := p.put(im, min(chunk, im.remaining))
			if errors.Is(err, errNoSpace) {
				if err := p.drop(im); err != nil {
					return err
				}
				b.fail(im, reason(err))
				running = slices.DeleteFunc(running, func(x *image) bool { return x == im })
				b.removeInFlight(im)
				end(im)
				continue
			}
			if err != nil {
				return fmt.Errorf("%s/%s at %ss: %w", im.container, im.checkpoint, fmtG(b.now), err)
			}
			im.remaining -= n
			if im.remaining == 0 {
				if err := p.complete(im); err != nil {
					return err
				}
				b.images[im.key()] = im
				b.stored += im.bytes
				running = slices.DeleteFunc(running, func(x *image) bool { return x == im })
				b.removeInFlight(im)
				end(im)
				if im.job != nil {
					im.job.stored = true
				}
			}
		}
		if !progress && len(running) > 0 {
			return fmt.Errorf("at %ss: every stream waits for another", fmtG(b.now))
		}
	}
	return nil
}

// reason is what a failed create's error says, without the wrapped sentinel.
func reason(err error) string {
	var r reasonError
	if errors.As(err, &r) {
		return string(r)
	}
	return err.Error()
}

type reasonError string

func (r reasonError) Error() string { return string(r) }
func (r reasonError) Unwrap() error { return errNoSpace }

func deleteImage(p placement, e event) error {
	b := p.state()
	b.now = e.TimeS
	im := b.images[e.key()]
	if im == nil {
		return nil // its create failed: nothing of it is on the device
	}
	delete(b.images, e.key())
	b.dev.clk.start(e.TimeS, nil)
	defer b.dev.clk.on(nil)
	if err := p.drop(im); err != nil {
		return err
	}
	return p.deleted(im)
}

// outcome is one policy's replay.
type outcome struct {
	Policy   string    `json:"policy"`
	Metrics  metrics   `json:"metrics"`
	Failures []failure `json:"failures"`
	Series   series    `json:"series"`
}

type series struct {
	TS             []float64  `json:"t_s"`
	Events         []int      `json:"events"`
	LiveBytes      []int64    `json:"live_bytes"`
	UsedZones      []int      `json:"used_zones"`
	UtilUsed       []*float64 `json:"util_used"`
	UtilTotal      []float64  `json:"util_total"`
	HostBytes      []int64    `json:"host_bytes"`
	RelocatedBytes []int64    `json:"relocated_bytes"`
	Resets         []int      `json:"resets"`
	MixedZones     []int      `json:"mixed_zones"`
	ZoneTS         []float64  `json:"zone_t_s,omitempty"`
	ZoneLivePct    [][]int    `json:"zone_live_pct,omitempty"`
}

// metrics, in the order the report lists them.
type metrics struct {
	Creates                int      `json:"creates"`
	Deletes                int      `json:"deletes"`
	Failed                 int      `json:"failed"`
	StoredBytes            int64    `json:"stored_bytes"`
	HostBytes              int64    `json:"host_bytes"`
	RelocatedBytes         int64    `json:"relocated_bytes"`
	WriteAmplification     *float64 `json:"write_amplification"`
	Resets                 int      `json:"resets"`
	Finishes               int      `json:"finishes"`
	GCRuns                 int      `json:"gc_runs"`
	FinishedUnwrittenBytes int64    `json:"finished_unwritten_bytes"`
	WastedBytes            int64    `json:"wasted_bytes"`
	MixedZonesMax          int      `json:"mixed_zones_max"`
	MixedZonesEnd          int      `json:"mixed_zones_end"`
	UtilUsedMin            *float64 `json:"util_used_min"`
	UtilUsedMean           *float64 `json:"util_used_mean"`
	UtilTotalMean          *float64 `json:"util_total_mean"`
	UtilTotalMax           *float64 `json:"util_total_max"`
	PeakLiveBytes          int64    `json:"peak_live_bytes"`
	PeakOpen               int      `json:"peak_open"`
	PeakActive             int      `json:"peak_active"`
	timing                          // with the time model only
}

// occupancySamples is how many states of every zone are kept for the
// occupancy map, at most.
const occupancySamples = 120

// replay runs the trace through one placement; the state is sampled after
// every step (a delete, or a group of creates taken together). occupancy:
// also keep every zone's state (live % of its capacity, -1 empty) at up to
// occupancySamples steps spread over the trace.
func replay(events []event, g geometry, policy string, pp params, occupancy bool) (*outcome, error) {
	markDeaths(events)
	p, err := newPlacement(policy, g, pp)
	if err != nil {
		return nil, err
	}
	b := p.state()
	if pp.Costs.on() {
		b.dev.clk = newClock(pp.Costs)
	}
	var s series
	var zt []float64
	var zl [][]int
	done := 0
	for _, grp := range groups(events) {
		if grp[0].Op == "create" {
			err = createGroup(p, grp, pp.Chunk)
		} else {
			err = deleteImage(p, grp[0])
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", policy, err)
		}
		done += len(grp)
		var live int64
		for _, l := range b.live {
			live += l
		}
		used := g.Zones - b.dev.countEmpty()
		s.TS = append(s.TS, grp[len(grp)-1].TimeS)
		s.Events = append(s.Events, done)
		s.LiveBytes = append(s.LiveBytes, live)
		s.UsedZones = append(s.UsedZones, used)
		if used > 0 {
			s.UtilUsed = append(s.UtilUsed, ptr(round4(float64(live)/float64(int64(used)*g.ZoneCapacity))))
		} else {
			s.UtilUsed = append(s.UtilUsed, nil)
		}
		s.UtilTotal = append(s.UtilTotal, round4(float64(live)/float64(g.capacity())))
		s.HostBytes = append(s.HostBytes, b.dev.hostBytes)
		s.RelocatedBytes = append(s.RelocatedBytes, b.dev.relocatedBytes)
		s.Resets = append(s.Resets, b.dev.m.Resets)
		s.MixedZones = append(s.MixedZones, b.dev.mixed())
		if occupancy {
			zt = append(zt, grp[len(grp)-1].TimeS)
			row := make([]int, g.Zones)
			for i := range row {
				if b.dev.empty(i) {
					row[i] = -1
				} else {
					row[i] = int(math.RoundToEven(100 * float64(b.live[i]) / float64(g.ZoneCapacity)))
				}
			}
			zl = append(zl, row)
		}
	}
	if occupancy && len(zt) > 0 {
		keep := make([]int, 0, occupancySamples)
		n := len(zt)
		if n > occupancySamples {
			for i := 0; i < occupancySamples; i++ {
				j := int(math.RoundToEven(float64(i*(n-1)) / float64(occupancySamples-1)))
				if len(keep) == 0 || keep[len(keep)-1] != j {
					keep = append(keep, j)
				}
			}
		} else {
			for i := range n {
				keep = append(keep, i)
			}
		}
		for _, i := range keep {
			s.ZoneTS = append(s.ZoneTS, zt[i])
			s.ZoneLivePct = append(s.ZoneLivePct, zl[i])
		}
	}
	if s.TS == nil {
		s = emptySeries()
	}
	return &outcome{Policy: policy, Metrics: summarise(b, &s, events), Failures: nonNil(b.failures), Series: s}, nil
}

func emptySeries() series {
	return series{TS: []float64{}, Events: []int{}, LiveBytes: []int64{}, UsedZones: []int{}, UtilUsed: []*float64{},
		UtilTotal: []float64{}, HostBytes: []int64{}, RelocatedBytes: []int64{}, Resets: []int{}, MixedZones: []int{}}
}

func nonNil(f []failure) []failure {
	if f == nil {
		return []failure{}
	}
	return f
}

func summarise(b *base, s *series, events []event) metrics {
	creates := 0
	for _, e := range events {
		if e.Op == "create" {
			creates++
		}
	}
	m := metrics{
		Creates: creates, Deletes: len(events) - creates, Failed: len(b.failures),
		StoredBytes: b.stored, HostBytes: b.dev.hostBytes, RelocatedBytes: b.dev.relocatedBytes,
		Resets: b.dev.m.Resets, Finishes: b.dev.m.Finishes, GCRuns: b.gcRuns,
		FinishedUnwrittenBytes: b.dev.m.FinishedUnwritten,
		MixedZonesEnd:          b.dev.mixed(),
		PeakOpen:               b.dev.m.MaxOpen, PeakActive: b.dev.m.MaxActive,
	}
	// Wasted: capacity that holds no byte of a stored image and was not
	// relocated: the images' block padding, the partial writes of creates
	// that failed, and what finishing zones early gave up.
	m.WastedBytes = m.HostBytes - m.StoredBytes + m.FinishedUnwrittenBytes
	if m.HostBytes > 0 {
		m.WriteAmplification = ptr(round4(float64(m.HostBytes+m.RelocatedBytes) / float64(m.HostBytes)))
	}
	var used []float64
	for _, u := range s.UtilUsed {
		if u != nil {
			used = append(used, *u)
		}
	}
	if len(used) > 0 {
		m.UtilUsedMin = ptr(slices.Min(used))
	}
	m.UtilUsedMean = timeMean(s.TS, s.UtilUsed)
	total := make([]*float64, len(s.UtilTotal))
	for i := range s.UtilTotal {
		total[i] = &s.UtilTotal[i]
	}
	m.UtilTotalMean = timeMean(s.TS, total)
	if len(s.UtilTotal) > 0 {
		m.UtilTotalMax = ptr(slices.Max(s.UtilTotal))
	}
	for _, v := range s.MixedZones {
		m.MixedZonesMax = max(m.MixedZonesMax, v)
	}
	for _, v := range s.LiveBytes {
		m.PeakLiveBytes = max(m.PeakLiveBytes, v)
	}
	m.timing = b.dev.clk.timing()
	return m
}

// timeMean is the mean of a state sampled at times ts, each value weighted
// by how long it held: states between rounds count, the moment between a
// round's creates and its deletes does not.
func timeMean(ts []float64, vs []*float64) *float64 {
	var span, sum float64
	pairs := 0
	for i := 0; i+1 < len(ts); i++ {
		if vs[i] == nil {
			continue
		}
		d := ts[i+1] - ts[i]
		span += d
		sum += d * *vs[i]
		pairs++
	}
	if span <= 0 {
		var n int
		var tot float64
		for _, v := range vs {
			if v != nil {
				tot += *v
				n++
			}
		}
		if n == 0 {
			return nil
		}
		return ptr(round4(tot / float64(n)))
	}
	return ptr(round4(sum / span))
}

func ptr(x float64) *float64 { return &x }

// round4 rounds as Python's round(x, 4) does: to the nearest of the
// decimals, from x's exact binary value.
func round4(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 4, 64), 64)
	return r
}

func humanSize(n int64) string {
	for _, u := range []struct {
		name string
		f    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.f {
			v := float64(n) / float64(u.f)
			if v == math.Trunc(v) {
				return fmt.Sprintf("%.0f%s", v, u.name)
			}
			return fmt.Sprintf("%.1f%s", v, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// markDeaths notes in every create of events when it is deleted (+Inf:
// never, it outlives the trace): what the oracle knows.
func markDeaths(events []event) {
	open := map[key]int{}
	for i, e := range events {
		switch e.Op {
		case "create":
			events[i].Death = math.Inf(1)
			open[e.key()] = i
		case "delete":
			if j, ok := open[e.key()]; ok {
				events[j].Death = e.TimeS
				delete(open, e.key())
			}
		}
	}
}
