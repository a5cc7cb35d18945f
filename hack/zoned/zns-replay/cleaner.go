package main

import "math"

// pickVictim is the zone a log's collector empties next among cands, by
// the cleaner's rule:
//
//   - greedy: the one with the least live data (the cheapest to copy);
//   - cost-benefit: the one with the most (1-u)*age/(1+u), LFS's rule,
//     where u is the share of its capacity that is live and age is how long
//     ago it was last written (old data is cold: what is left of it is
//     likely to stay, so freeing its zone now pays off for longer). A zone
//     with nothing live costs nothing and goes first.
//
// Ties go to the lower zone; -1 if cands is empty.
func pickVictim(b *base, cleaner string, cands []int) int {
	v, best := -1, math.Inf(-1)
	for _, z := range cands {
		var score float64
		switch cleaner {
		case "cost-benefit":
			u := float64(b.live[z]) / float64(b.g.ZoneCapacity)
			if b.live[z] == 0 {
				score = math.Inf(1)
			} else {
				score = (1 - u) * (b.now - b.written[z]) / (1 + u)
			}
		default:
			score = -float64(b.live[z])
		}
		if v < 0 || score > best {
			v, best = z, score
		}
	}
	return v
}
