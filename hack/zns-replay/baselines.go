package main

import (
	"fmt"
	"slices"
)

// The baselines the daemon's placement is measured against, on the same
// device model: a shared log and a multi-head log with greedy garbage
// collection, zone-aware placement (every image in zones of its own, what
// the daemon did first) and zone-tail (whole zones for an image's whole
// part, its tail at a head shared by its container's checkpoints).

// sharedLog is one append log for everything, zones filled in order, all
// containers' chunks interleaved. A delete only makes bytes dead. When a new
// zone is needed and no more than gcReserve empty zones are left, greedy
// garbage collection takes the full zone with the least live data, appends
// its live bytes at the log head and resets it. The reserve is for the
// collector: host writes never take it, and images that would not fit
// beside the live data outside it fail up front.
type sharedLog struct {
	*base
	gcReserve int
	head      int // -1: none
	// multi-log: heads by key ("gc" is the collector's), and the head each
	// container is dealt.
	multi  bool
	nheads int
	heads  map[string]int
	dealt  map[string]int
}

func newSharedLog(g geometry, gcReserve int) *sharedLog {
	return &sharedLog{base: newBase(g), gcReserve: gcReserve, head: -1}
}

// newMultiLog is the shared log with several heads: each container's images
// are appended at a head of their own (containers are dealt to heads in the
// order they first write, so with as many heads as containers no zone mixes
// two of them), and the collector appends what it relocates at a head of
// its own, as ZenFS separates data by lifetime into open zones. Every head
// holds one open zone, so heads + 1 is at most the device's open (and
// active) limit; heads 0 takes the most the limit allows.
func newMultiLog(g geometry, gcReserve, heads int) *sharedLog {
	l := newSharedLog(g, gcReserve)
	l.multi = true
	l.nheads = heads
	if heads == 0 {
		l.nheads = maxHeads(g)
	}
	l.heads = map[string]int{}
	l.dealt = map[string]int{}
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
	usable := int64(l.g.Zones-l.gcReserve) * l.g.ZoneCapacity
	need := im.padded
	for _, x := range l.live {
		need += x
	}
	for _, x := range l.inFlight {
		need += x.remaining
	}
	if need > usable {
		return fmt.Sprintf("device full: %s live with it, %s outside the GC reserve", humanSize(need), humanSize(usable)), nil
	}
	return "", nil
}

func (l *sharedLog) put(im *image, n int64) (int64, error) {
	return n, l.appendLog(im, n, false)
}

func (l *sharedLog) complete(im *image) error { return nil }
func (l *sharedLog) deleted(im *image) error  { return nil }
func (l *sharedLog) drop(im *image) error {
	l.dropExtents(im)
	return nil
}

// headKey is the head im's bytes go to: the log's one head, or in a
// multi-head log the container's or the collector's.
func (l *sharedLog) headKey(im *image, gc bool) string {
	if !l.multi {
		return ""
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

func (l *sharedLog) headOf(key string) int {
	if !l.multi {
		return l.head
	}
	if z, ok := l.heads[key]; ok {
		return z
	}
	return -1
}

func (l *sharedLog) setHead(key string, z int) {
	if l.multi {
		l.heads[key] = z
	} else {
		l.head = z
	}
}

func (l *sharedLog) appendLog(im *image, n int64, gc bool) error {
	key := l.headKey(im, gc)
	for n > 0 {
		z := l.headOf(key)
		if z < 0 || l.dev.full(z) {
			if !gc {
				if err := l.collect(); err != nil { // which may itself take zones
					return err
				}
			}
			z = l.headOf(key)
			if z < 0 || l.dev.full(z) {
				var err error
				if z, err = l.takeZone(gc); err != nil {
					return err
				}
				l.setHead(key, z)
			}
		}
		k := min(n, l.g.ZoneCapacity-l.dev.wp[z])
		if err := l.write(im, z, k, gc); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func (l *sharedLog) takeZone(gc bool) (int, error) {
	empty := l.dev.emptyZones()
	if !gc && len(empty) <= l.gcReserve {
		return -1, reasonError(fmt.Sprintf("device full: no empty zone outside the GC reserve of %d", l.gcReserve))
	}
	if len(empty) == 0 {
		return -1, reasonError("device full: the collector found no empty zone")
	}
	return empty[0], nil
}

func (l *sharedLog) collect() error {
	for l.dev.countEmpty() <= l.gcReserve {
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

// victim is the full zone with the least live data, if its live data fits
// where the collector appends; -1 if none.
func (l *sharedLog) victim() int {
	v := -1
	for i := range l.g.Zones {
		if l.dev.full(i) && (v < 0 || l.live[i] < l.live[v]) {
			v = i
		}
	}
	if v < 0 {
		return -1
	}
	room := int64(l.dev.countEmpty()) * l.g.ZoneCapacity
	if h := l.headOf(l.headKey(nil, true)); h >= 0 && !l.dev.full(h) {
		room += l.g.ZoneCapacity - l.dev.wp[h]
	}
	if l.live[v] >= l.g.ZoneCapacity || l.live[v] > room {
		return -1
	}
	return v
}

func (l *sharedLog) relocate(v int) error {
	l.gcRuns++
	for _, x := range l.heldInOrder(v) {
		im := x.im
		im.extents = slices.DeleteFunc(im.extents, func(e *extent) bool { return e == x })
		delete(l.held[v], x)
		l.live[v] -= x.length
		if err := l.appendLog(im, x.length, true); err != nil {
			return err
		}
	}
	if err := l.reset(v); err != nil {
		return err
	}
	// No head stays on a zone that was reset.
	if l.multi {
		for k, z := range l.heads {
			if z == v {
				delete(l.heads, k)
			}
		}
	} else if l.head == v {
		l.head = -1
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
