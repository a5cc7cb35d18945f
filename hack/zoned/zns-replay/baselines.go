package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// The baselines the daemon's placement is measured against, on the same
// device model: a shared log and a multi-head log with greedy garbage
// collection, zone-aware placement (every image in zones of its own, what
// the daemon did first) and zone-tail (whole zones for an image's whole
// part, its tail at a head shared by its container's checkpoints).

// sharedLog is one append log for everything, zones filled in order, all
// containers' chunks interleaved. The logs keep the rules zone-pack keeps
// (reserve.go, cleaner.go):
//
//   - a zone is reset as soon as nothing in it is live: by the delete (or
//     the failed create) that made its last bytes dead, not later on a
//     create's path;
//   - the reserve is the admission bound alone (reserve.go): images that
//     would not fit beside the live data outside it fail up front, and
//     every zone may be written, as zone-pack's may;
//   - the collector keeps one zone empty to relocate into while it can
//     (spareZones, the same at every reserve), and host writes take that
//     one too when it cannot free another;
//   - when a create would not fit in the empty zones but the spare one and
//     the room of the heads it can use, the collector relocates the live
//     data of victims (any zone that holds data, partly written ones too,
//     picked by the cleaner's rule) at its own head and resets them, before
//     the create is written; and when a head fills with no more than the
//     spare zone empty, it does so again.
//
// A log's idle variant (idle) also cleans after every delete, off any
// create's path (cleanIdle).
type sharedLog struct {
	*base
	reserve int // the admission bound's zones
	cleaner string
	head    int // -1: none
	// The multi-head logs: heads by key ("gc" is the collector's), the
	// head slot each deal key (a container) is dealt.
	mode   string // "shared", "multi" (by container), "hint" (ZenFS's allocator), "oracle" (by death)
	nheads int
	heads  map[string]int
	dealt  map[string]int
	// oracle: the death time each key stands for
	keyDeath map[string]float64
	// hint: the lifetime class of each host head, and the zone each image
	// being written appends at
	life map[int]lifeClass
	cur  map[*image]int
	// the zone being relocated (-1: none), still active until its reset
	draining int
	// idle: clean after deletes until the empty zones hold the largest
	// group of creates taken together so far (idleGoal)
	idle                 bool
	groupAt              float64
	groupBytes, idleGoal int64
}

func newSharedLog(g geometry, pp params) *sharedLog {
	return &sharedLog{base: newBase(g), reserve: pp.GCReserve, cleaner: pp.Cleaner, head: -1, mode: "shared", draining: -1, groupAt: -1}
}

// newMultiLog is the shared log with several heads: each container's images
// are appended at a head of their own (containers are dealt to heads in the
// order they first write, so with as many heads as containers no zone mixes
// two of them), and the collector appends what it relocates at a head of
// its own, as ZenFS separates data by lifetime into open zones. Every head
// holds one open zone, so heads + 1 is at most the device's open (and
// active) limit; heads 0 takes the most the limit allows. When an image's
// head is full and no empty zone is left, it goes on at the host head with
// the most room, as zone-pack puts a tail in any head that has room.
func newMultiLog(g geometry, pp params) *sharedLog {
	return newHeadedLog(g, pp, "multi")
}

// newHintLog is ZenFS's allocator (zbd.cc, AllocateIOZone with
// GetBestOpenZoneMatch and GetLifeTimeDiff) over the trace's declared
// lifetimes (hint_s, in classes a factor of two apart, one class for no
// hint): an image appends at one zone until it is full, then takes another
// (allocate); the collector has a head of its own.
func newHintLog(g geometry, pp params) *sharedLog {
	l := newHeadedLog(g, pp, "hint")
	l.life = map[int]lifeClass{}
	l.cur = map[*image]int{}
	return l
}

// newOracle is the offline placement: it knows when every image will be
// deleted (the trace's own delete) and appends it at the head of the data
// that dies at that same time, or, when every head is taken, at the head
// whose data dies nearest it; what the collector relocates goes the same
// way (it has no head of its own, so it has one head more than the other
// multi-head logs). It is the bound the online placements are read against,
// not a proof of the least possible relocation.
func newOracle(g geometry, pp params) *sharedLog {
	l := newHeadedLog(g, pp, "oracle")
	l.nheads++
	l.keyDeath = map[string]float64{}
	return l
}

func newHeadedLog(g geometry, pp params, mode string) *sharedLog {
	l := newSharedLog(g, pp)
	l.mode = mode
	l.nheads = pp.Heads
	if l.nheads == 0 {
		l.nheads = maxHeads(g)
	}
	l.heads = map[string]int{}
	l.dealt = map[string]int{}
	return l
}

// idleLog is log's variant that cleans while the device is idle.
func idleLog(l *sharedLog) *sharedLog {
	l.idle = true
	return l
}

// maxHeads is the most host heads a multi-head log can keep open beside
// the collector's on g (16 when the device sets no limit).
func maxHeads(g geometry) int {
	limit := 17
	if l := limitOf(g); l > 0 {
		limit = l
	}
	return max(1, limit-1)
}

// limitOf is the smaller of the open and active limits that are set (0:
// neither).
func limitOf(g geometry) int {
	l := 0
	for _, x := range []int{g.MaxOpen, g.MaxActive} {
		if x > 0 && (l == 0 || x < l) {
			l = x
		}
	}
	return l
}

func (l *sharedLog) streams() int         { return 0 }
func (l *sharedLog) ready(im *image) bool { return true }
func (l *sharedLog) admitOnStart() bool   { return false }

func (l *sharedLog) admit(im *image) (string, error) {
	if why := overReserve(l.base, im, l.reserve); why != "" {
		return why, nil
	}
	if l.groupAt != l.now {
		l.groupAt, l.groupBytes = l.now, 0
	}
	l.groupBytes += im.padded
	l.idleGoal = max(l.idleGoal, l.groupBytes)
	// Relocation on demand: make room for the creates taken so far and
	// this one before any of them is written.
	need := im.padded
	for _, x := range l.inFlight {
		need += x.remaining
	}
	for tries := 0; l.room() < need && tries < l.g.Zones; tries++ {
		v := l.victim()
		if v < 0 {
			break
		}
		if err := l.relocate(v); err != nil {
			return "", err
		}
	}
	return "", nil
}

// spareZones is how many empty zones a log's collector keeps to relocate
// into while it can: one, so that a victim's live data always has a place
// (gcRoom), whatever the reserve.
const spareZones = 1

// room is what host writes may take without the collector: the empty zones
// but the collector's spare and what the heads host writes can use have left
// (every host head in the multi-head logs, which go on in any head when
// theirs is full and no empty zone is left; never the collector's own).
func (l *sharedLog) room() int64 {
	r := l.spareRoom()
	for _, z := range l.hostHeads() {
		r += l.g.ZoneCapacity - l.dev.wp[z]
	}
	return r
}

// hostHeads are the zones host writes are appended at that are not full.
func (l *sharedLog) hostHeads() []int {
	var out []int
	if l.mode == "shared" {
		if l.head >= 0 && !l.dev.full(l.head) {
			out = append(out, l.head)
		}
		return out
	}
	for k, z := range l.heads {
		if k != "gc" && !l.dev.full(z) && !slices.Contains(out, z) {
			out = append(out, z)
		}
	}
	slices.Sort(out)
	return out
}

func (l *sharedLog) put(im *image, n int64) (int64, error) {
	return n, l.appendLog(im, n, false)
}

func (l *sharedLog) complete(im *image) error {
	if l.cur != nil {
		delete(l.cur, im)
	}
	return nil
}

// drop makes im's bytes dead and resets every zone of them in which
// nothing is left live (a head too: it starts again in an empty zone).
func (l *sharedLog) drop(im *image) error {
	var zones []int
	for _, x := range im.extents {
		if !slices.Contains(zones, x.zone) {
			zones = append(zones, x.zone)
		}
	}
	l.dropExtents(im)
	if l.cur != nil {
		delete(l.cur, im)
	}
	slices.Sort(zones)
	for _, z := range zones {
		if l.live[z] != 0 || l.dev.empty(z) || z == l.draining {
			continue
		}
		l.forget(z)
		if err := l.reset(z); err != nil {
			return err
		}
	}
	return nil
}

// forget takes zone z out of the heads: nothing more is appended at it.
func (l *sharedLog) forget(z int) {
	if l.mode == "shared" {
		if l.head == z {
			l.head = -1
		}
		return
	}
	for k, v := range l.heads {
		if v == z {
			delete(l.heads, k)
			if l.keyDeath != nil {
				delete(l.keyDeath, k)
			}
		}
	}
	if l.life != nil {
		delete(l.life, z)
	}
}

// deleted cleans, in the idle variant, while the device has nothing else
// to do (cleanIdle).
func (l *sharedLog) deleted(im *image) error {
	if !l.idle {
		return nil
	}
	return l.cleanIdle()
}

// cleanIdle relocates, after a delete and so off any create's path, the
// live data of the victims the cleaner's rule picks (as the collector on
// demand would), until the empty zones but the spare one hold the largest
// group of creates taken together so far: the heads' room is not counted,
// since a head that fills takes an empty zone before it goes on in
// another's. What it leaves undone the collector does on demand.
func (l *sharedLog) cleanIdle() error {
	for tries := 0; l.spareRoom() < l.idleGoal && tries < l.g.Zones; tries++ {
		v := l.victim()
		if v < 0 {
			return nil
		}
		if err := l.relocate(v); err != nil {
			return err
		}
	}
	return nil
}

// spareRoom is the capacity of the empty zones but the collector's spare.
func (l *sharedLog) spareRoom() int64 {
	return int64(max(0, l.dev.countEmpty()-spareZones)) * l.g.ZoneCapacity
}

// headKey is the head im's bytes go to: the log's one head, or in a
// multi-head log its container's or the collector's, or in the oracle its
// death time's.
func (l *sharedLog) headKey(im *image, gc bool) string {
	switch l.mode {
	case "shared":
		return ""
	case "oracle":
		return l.deathKey(im.death)
	}
	if gc {
		return "gc"
	}
	h, ok := l.dealt[im.container]
	if !ok {
		h = len(l.dealt) % l.nheads
		l.dealt[im.container] = h
	}
	return fmt.Sprint(h)
}

// lifeClass is the class of a declared lifetime: lifetimes from 2^k to
// 2^(k+1) seconds share one; no hint is a class of its own (set false).
type lifeClass struct {
	set bool
	k   int
}

func lifeClassOf(h float64) lifeClass {
	if h <= 0 {
		return lifeClass{}
	}
	return lifeClass{true, int(math.Floor(math.Log2(h)))}
}

// ZenFS's lifetime differences (GetLifeTimeDiff).
const (
	lifeCouldBeWorse = 50
	lifeNotGood      = 100
)

// lifeDiff is how well a zone of lifetime class zone suits a file of class
// file, as ZenFS's GetLifeTimeDiff rates it: a zone whose data lives
// longer by d classes d, one of the same class lifeCouldBeWorse (ZenFS
// opens a new zone rather, while it may), one whose data dies sooner
// lifeNotGood; without a hint only a zone without one suits (0).
func lifeDiff(zone, file lifeClass) int {
	switch {
	case !file.set:
		if !zone.set {
			return 0
		}
		return lifeNotGood
	case !zone.set:
		return lifeNotGood
	case zone.k > file.k:
		return zone.k - file.k
	case zone.k == file.k:
		return lifeCouldBeWorse
	}
	return lifeNotGood
}

// hintZone is the zone im's next bytes go to in the hint log: the zone it
// is appending at while that is a head with room, else allocate's.
func (l *sharedLog) hintZone(im *image) (int, error) {
	if z, ok := l.cur[im]; ok && !l.dev.full(z) && l.heads[zoneKey(z)] == z {
		return z, nil
	}
	delete(l.cur, im)
	z, err := l.allocate(im)
	if err != nil {
		return -1, err
	}
	l.cur[im] = z
	return z, nil
}

func zoneKey(z int) string { return "z" + strconv.Itoa(z) }

// allocate is ZenFS's AllocateIOZone for im: the open host head whose
// lifetime class suits it best if one lives longer than it; else a new
// zone of its class while fewer than nheads heads are open; else a head
// of its own class; else it finishes the head with the least room left
// (FinishCheapestIOZone) to open a new one. With no empty zone left (and
// none the collector frees) it goes on at the head that suits it best
// whatever its class, where ZenFS would fail the write.
func (l *sharedLog) allocate(im *image) (int, error) {
	file := lifeClassOf(im.hint)
	best, diff := -1, lifeNotGood
	for _, z := range l.hostHeads() {
		if d := lifeDiff(l.life[z], file); d < diff {
			best, diff = z, d
		}
	}
	if diff < lifeCouldBeWorse {
		return best, nil
	}
	if len(l.hostHeads()) >= l.nheads && diff == lifeCouldBeWorse {
		return best, nil
	}
	if err := l.collect(); err != nil { // which may itself take zones
		return -1, err
	}
	if l.dev.countEmpty() == 0 {
		if _, z := l.anyHead(im); z >= 0 {
			return z, nil
		}
		return l.takeZone(false)
	}
	for len(l.hostHeads()) >= l.nheads {
		if err := l.finishCheapest(); err != nil {
			return -1, err
		}
	}
	z, err := l.takeZone(false)
	if err != nil {
		return -1, err
	}
	l.heads[zoneKey(z)] = z
	l.life[z] = file
	return z, nil
}

// finishCheapest finishes the host head with the least room left (the
// lower zone on a tie), as ZenFS's FinishCheapestIOZone frees an active
// zone for a new one.
func (l *sharedLog) finishCheapest() error {
	v := -1
	for _, z := range l.hostHeads() {
		if v < 0 || l.dev.wp[z] > l.dev.wp[v] {
			v = z
		}
	}
	if v < 0 {
		return nil
	}
	l.forget(v)
	return l.dev.FinishZone(v)
}

// deathKey is the oracle's head for data that dies at d: the head of that
// death time, a new one while fewer than nheads are open, else the open
// head whose data dies nearest d.
func (l *sharedLog) deathKey(d float64) string {
	k := strconv.FormatFloat(d, 'g', -1, 64)
	if z, ok := l.heads[k]; ok && !l.dev.full(z) {
		return k
	}
	var open []string
	for kk, z := range l.heads {
		if !l.dev.full(z) {
			open = append(open, kk)
		} else {
			// A full head takes nothing more: the oracle forgets it (a
			// key whose head is missing or full gets a new zone alike).
			delete(l.heads, kk)
			delete(l.keyDeath, kk)
		}
	}
	busy := len(open)
	if l.draining >= 0 && !l.dev.full(l.draining) {
		busy++ // no head any more, but active until it is reset
	}
	// A head whose data dies at about the same time (neither living more
	// than a tenth longer from now) is shared before a new head is opened.
	for _, kk := range sortedKeys(open) {
		if nearDeath(l.keyDeath[kk], d, l.now) {
			return kk
		}
	}
	if busy < l.nheads {
		l.keyDeath[k] = d
		return k
	}
	if len(open) == 0 {
		l.keyDeath[k] = d // the zone being relocated is the one head: its data goes to the next
		return k
	}
	slices.Sort(open)
	best, bd := "", math.Inf(1)
	for _, kk := range open {
		if dd := deathDistance(l.keyDeath[kk], d); best == "" || dd < bd {
			best, bd = kk, dd
		}
	}
	return best
}

// anyHead is the host head with room that im goes on at when no empty
// zone is left for a head of its own (-1 if none has room): in the oracle
// the one whose data dies nearest im's, in the hint log the one whose
// lifetime class suits im best, in the multi-head log the one with the
// most room; the lower zone on a tie.
func (l *sharedLog) anyHead(im *image) (string, int) {
	best, bz := "", -1
	var bd float64
	for k, z := range l.heads {
		if k == "gc" || z == l.draining || l.dev.full(z) {
			continue
		}
		var d float64
		switch l.mode {
		case "oracle":
			d = deathDistance(l.keyDeath[k], im.death)
		case "hint":
			d = float64(lifeDiff(l.life[z], lifeClassOf(im.hint)))
		default:
			d = float64(l.dev.wp[z])
		}
		if bz < 0 || d < bd || (d == bd && z < bz) {
			best, bz, bd = k, z, d
		}
	}
	return best, bz
}

func sortedKeys(ks []string) []string {
	ks = slices.Clone(ks)
	slices.Sort(ks)
	return ks
}

// nearDeath says whether data dying at a and at b, seen at now, die at
// about the same time: both never, or neither living more than a tenth
// longer than the other from now.
func nearDeath(a, b, now float64) bool {
	if math.IsInf(a, 1) || math.IsInf(b, 1) {
		return math.IsInf(a, 1) && math.IsInf(b, 1)
	}
	x, y := a-now, b-now
	if x > y {
		x, y = y, x
	}
	return x > 0 && y <= 1.1*x
}

func deathDistance(a, b float64) float64 {
	if math.IsInf(a, 1) && math.IsInf(b, 1) {
		return 0
	}
	return math.Abs(a - b)
}

func (l *sharedLog) headOf(key string) int {
	if l.mode == "shared" {
		return l.head
	}
	if z, ok := l.heads[key]; ok {
		return z
	}
	return -1
}

func (l *sharedLog) setHead(key string, z int) {
	if l.mode == "shared" {
		l.head = z
	} else {
		l.heads[key] = z
	}
}

func (l *sharedLog) appendLog(im *image, n int64, gc bool) error {
	for n > 0 {
		z, err := l.zoneFor(im, gc)
		if err != nil {
			return err
		}
		k := min(n, l.g.ZoneCapacity-l.dev.wp[z])
		if err := l.write(im, z, k, gc); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// zoneFor is the zone the next bytes of im go to: its head while that has
// room; else, after the collector's turn, a new head in an empty zone; else
// (a multi-head log's host writes, and all of the oracle's) another head
// with room.
func (l *sharedLog) zoneFor(im *image, gc bool) (int, error) {
	if l.mode == "hint" && !gc {
		return l.hintZone(im)
	}
	key := l.headKey(im, gc)
	if z := l.headOf(key); z >= 0 && !l.dev.full(z) {
		return z, nil
	}
	if !gc {
		if err := l.collect(); err != nil { // which may itself take zones
			return -1, err
		}
		key = l.headKey(im, gc)
		if z := l.headOf(key); z >= 0 && !l.dev.full(z) {
			return z, nil
		}
	}
	z, err := l.takeZone(gc)
	if err == nil {
		l.setHead(key, z)
		return z, nil
	}
	if (!gc && l.mode != "shared") || l.mode == "oracle" { // the oracle's collector too
		if _, z := l.anyHead(im); z >= 0 {
			return z, nil
		}
	}
	return -1, err
}

// takeZone is an empty zone for a new head. Host writes take the
// collector's spare one too: the collector had its turn (collect) and
// could not free another.
func (l *sharedLog) takeZone(gc bool) (int, error) {
	if l.dev.countEmpty() == 0 {
		if gc {
			return -1, reasonError("device full: the collector found no empty zone")
		}
		return -1, reasonError("device full: no empty zone, and no zone the collector could free")
	}
	return l.dev.firstEmpty(), nil
}

func (l *sharedLog) collect() error {
	for tries := 0; l.dev.countEmpty() <= spareZones && tries < l.g.Zones; tries++ {
		v := l.victim()
		if v < 0 {
			return nil
		}
		if err := l.relocate(v); err != nil {
			return err
		}
	}
	return nil
}

// victim is the zone the cleaner's rule picks among those whose relocation
// frees something (dead data beside the live) and whose live data
// fits where the collector appends; -1 if none. Any zone that holds data
// may be one, partly written ones (a head too) included.
func (l *sharedLog) victim() int {
	gcHead := -1
	if l.mode != "shared" && l.mode != "oracle" {
		gcHead = l.headOf("gc")
	}
	var cands []int
	for i := range l.g.Zones {
		if l.dev.empty(i) || i == gcHead || l.live[i] >= l.dev.wp[i] {
			continue
		}
		if l.live[i] > l.gcRoom(i) {
			continue
		}
		cands = append(cands, i)
	}
	return pickVictim(l.base, l.cleaner, cands)
}

// gcRoom is where the collector could put the live data of zone v: the
// empty zones and the room of the head it appends at, v's own excluded
// (the oracle's: every head, where it goes when there is no empty zone for
// a head of the data's own death time).
func (l *sharedLog) gcRoom(v int) int64 {
	room := int64(l.dev.countEmpty()) * l.g.ZoneCapacity
	var heads []int
	switch l.mode {
	case "oracle":
		heads = l.hostHeads() // anyHead
	case "shared":
		heads = l.hostHeads() // the one head the collector shares
	default:
		if h := l.headOf("gc"); h >= 0 && !l.dev.full(h) {
			heads = []int{h}
		}
	}
	for _, h := range heads {
		if h != v {
			room += l.g.ZoneCapacity - l.dev.wp[h]
		}
	}
	return room
}

func (l *sharedLog) relocate(v int) error {
	l.gcRuns++
	l.dev.clk.relocating(true)
	defer l.dev.clk.relocating(false)
	// No head stays on the zone being emptied: what is relocated and what
	// comes after goes elsewhere.
	l.forget(v)
	l.draining = v
	defer func() { l.draining = -1 }()
	for _, x := range l.heldInOrder(v) {
		im := x.im
		im.extents = slices.DeleteFunc(im.extents, func(e *extent) bool { return e == x })
		delete(l.held[v], x)
		l.live[v] -= x.length
		l.dev.clk.read(x.length)
		if err := l.appendLog(im, x.length, true); err != nil {
			// The victim was picked for the room there is: no room is a
			// defect of the collector's accounting, and stops the replay.
			return fmt.Errorf("relocating zone %d: %v", v, err)
		}
	}
	if err := l.reset(v); err != nil {
		return err
	}
	return nil
}

// zoneAware puts every image in zones of its own: a fresh empty zone to
// start, the last one finished when the image is complete, all of them
// reset when it is deleted. Each image being written holds one open zone,
// so no more images than the device's open (and active) limit are written
// at once; the rest wait for a turn.
type zoneAware struct {
	*base
	promised map[int]bool // empty zones set aside for images not yet written
}

func newZoneAware(g geometry) *zoneAware {
	return &zoneAware{base: newBase(g), promised: map[int]bool{}}
}

func (a *zoneAware) streams() int         { return limitOf(a.g) }
func (a *zoneAware) ready(im *image) bool { return true }
func (a *zoneAware) admitOnStart() bool   { return false }

// free are the empty zones nobody was promised, in order.
func free(b *base, promised map[int]bool) []int {
	var out []int
	for _, z := range b.dev.emptyZones() {
		if !promised[z] {
			out = append(out, z)
		}
	}
	return out
}

func (a *zoneAware) admit(im *image) (string, error) {
	need := int((im.padded + a.g.ZoneCapacity - 1) / a.g.ZoneCapacity)
	f := free(a.base, a.promised)
	if need > len(f) {
		return fmt.Sprintf("device full: needs %d empty zones, %d left", need, len(f)), nil
	}
	im.zones = f[:need]
	for _, z := range im.zones {
		a.promised[z] = true
	}
	return "", nil
}

func (a *zoneAware) put(im *image, n int64) (int64, error) {
	done := int64(0)
	for done < n {
		z := -1
		for _, x := range im.zones {
			if !a.dev.full(x) {
				z = x
				break
			}
		}
		k := min(n-done, a.g.ZoneCapacity-a.dev.wp[z])
		if err := a.write(im, z, k, false); err != nil {
			return done, err
		}
		done += k
	}
	return done, nil
}

func (a *zoneAware) complete(im *image) error {
	for _, z := range im.zones {
		if err := a.dev.FinishZone(z); err != nil {
			return err
		}
		delete(a.promised, z)
	}
	return nil
}

func (a *zoneAware) drop(im *image) error {
	a.dropExtents(im)
	return nil
}

func (a *zoneAware) deleted(im *image) error {
	for _, z := range im.zones {
		if err := a.reset(z); err != nil {
			return err
		}
	}
	return nil
}

// zoneTail gives the part of an image that fills whole zones zones of its
// own, as zone-aware placement; the rest of it (its tail, less than a zone)
// is appended at a head shared by the container's checkpoints (containers
// dealt round-robin over a quarter of the open limit), so that tails that
// die in the order they were written share zones, and no image is rounded
// up to whole zones. A tail that does not fit in its head's room fills it
// and goes on in a new head zone. A zone is reset as soon as nothing in it
// is live; there is no collector and nothing is relocated.
type zoneTail struct {
	*base
	nheads, nstreams int
	heads            map[int]int    // head number -> its zone
	dealt            map[string]int // container -> head number
	room             map[int]int64  // head zone -> capacity not yet promised to a tail
	pending          map[int]int64  // zone -> bytes promised to tails, not yet written
	promised         map[int]bool   // empty zones set aside for images being written
}

type tailPart struct {
	zone int
	n    int64
}

func newZoneTail(g geometry) *zoneTail {
	limit := limitOf(g)
	if limit == 0 {
		limit = 16
	}
	nheads := max(1, limit/4)
	return &zoneTail{base: newBase(g), nheads: nheads, nstreams: max(1, limit-2*nheads),
		heads: map[int]int{}, dealt: map[string]int{}, room: map[int]int64{}, pending: map[int]int64{}, promised: map[int]bool{}}
}

func (t *zoneTail) streams() int         { return t.nstreams }
func (t *zoneTail) ready(im *image) bool { return true }
func (t *zoneTail) admitOnStart() bool   { return false }

func (t *zoneTail) admit(im *image) (string, error) {
	c := t.g.ZoneCapacity
	whole, tail := int(im.padded/c), im.padded%c
	slot, ok := t.dealt[im.container]
	if !ok {
		slot = len(t.dealt) % t.nheads
		t.dealt[im.container] = slot
	}
	h, hasHead := t.heads[slot]
	var room int64
	if hasHead {
		room = t.room[h]
	}
	newHead := tail > room
	f := free(t.base, t.promised)
	need := whole
	if newHead {
		need++
	}
	if need > len(f) {
		return fmt.Sprintf("device full: needs %d empty zones, %d left", need, len(f)), nil
	}
	im.zones = f[:whole]
	for _, z := range im.zones {
		t.promised[z] = true
	}
	im.tail = nil
	if tail > 0 {
		if room > 0 {
			im.tail = append(im.tail, tailPart{h, min(room, tail)})
		}
		if newHead {
			if hasHead {
				delete(t.room, h) // full once its promised tails are written
			}
			h = f[whole]
			t.heads[slot] = h
			t.promised[h] = true
			t.room[h] = c
			im.tail = append(im.tail, tailPart{h, tail - room})
		}
		for _, p := range im.tail {
			if _, ok := t.room[p.zone]; ok {
				t.room[p.zone] -= p.n
			}
			t.pending[p.zone] += p.n
		}
	}
	return "", nil
}

func (t *zoneTail) put(im *image, n int64) (int64, error) {
	done := int64(0)
	for done < n {
		z, k := -1, int64(0)
		for _, x := range im.zones {
			if !t.dev.full(x) {
				z = x
				break
			}
		}
		if z >= 0 {
			k = min(n-done, t.g.ZoneCapacity-t.dev.wp[z])
		} else {
			z = im.tail[0].zone
			k = min(n-done, im.tail[0].n)
			im.tail[0].n -= k
			if im.tail[0].n == 0 {
				im.tail = im.tail[1:]
			}
			t.pending[z] -= k
			delete(t.promised, z)
		}
		if err := t.write(im, z, k, false); err != nil {
			return done, err
		}
		done += k
	}
	return done, nil
}

func (t *zoneTail) complete(im *image) error {
	for _, z := range im.zones {
		delete(t.promised, z)
	}
	return nil
}

func (t *zoneTail) drop(im *image) error {
	seen := map[int]bool{}
	for _, x := range im.extents {
		seen[x.zone] = true
	}
	t.dropExtents(im)
	for _, p := range im.tail { // a failed create: what it was promised is not coming
		t.pending[p.zone] -= p.n
		seen[p.zone] = true
	}
	im.tail = nil
	im.dropped = im.dropped[:0]
	for z := range seen {
		im.dropped = append(im.dropped, z)
	}
	slices.Sort(im.dropped)
	return nil
}

func (t *zoneTail) deleted(im *image) error {
	zones := slices.Clone(im.zones)
	for _, z := range im.dropped {
		if !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
	}
	for _, z := range zones {
		if err := t.resetIfDead(z); err != nil {
			return err
		}
	}
	return nil
}

func (t *zoneTail) resetIfDead(z int) error {
	if t.live[z] != 0 || t.dev.empty(z) || t.pending[z] != 0 {
		return nil
	}
	if _, ok := t.room[z]; ok { // the current head: it starts again empty
		for k, v := range t.heads {
			if v == z {
				delete(t.heads, k)
			}
		}
		delete(t.room, z)
	}
	return t.reset(z)
}
