package main

import "fmt"

// overReserve says why im may not be written (""; it may) under a reserve
// of r zones, a rule every policy that relocates keeps alike (the logs and
// zone-pack): live host data, with the creates being written and im, never
// exceeds the capacity of all zones but r. It is the reserve's one meaning
// for every policy: zone-pack's placement keeps its own account of empty
// zones and may write in any of them, and so may the logs, whose collector
// keeps one zone empty while it can at every reserve (spareZones).
func overReserve(b *base, im *image, r int) string {
	usable := int64(b.g.Zones-r) * b.g.ZoneCapacity
	need := im.padded
	for _, x := range b.live {
		need += x
	}
	for _, x := range b.inFlight {
		need += x.remaining
	}
	if need <= usable {
		return ""
	}
	if r == 0 {
		return fmt.Sprintf("device full: %s live with it, %s on the device", humanSize(need), humanSize(usable))
	}
	return fmt.Sprintf("device full: %s live with it, %s outside the GC reserve", humanSize(need), humanSize(usable))
}
