// Package main is linkemu, a userspace WAN link emulator on TUN devices, for
// kernels without sch_netem.
//
// It follows Mahimahi's design (mm-delay, mm-link, mm-loss), one stage per
// property, composed per direction:
//
//	loss -> drop-tail queue + rate (serialisation time) -> delay (+ jitter) -> out
//
// Two TUN devices, each created in a network namespace of its own, are the
// link's two ends; every IP packet read from one end leaves the other after the
// stages. The devices are not persistent: they, and the routes through them,
// disappear when linkemu exits.
package main

import (
	"math/rand"
	"sync"
	"time"
)

// Params describe one direction of a link.
type Params struct {
	Delay     time.Duration // one-way propagation delay
	Jitter    time.Duration // uniform in [-Jitter, +Jitter], never reorders
	RateBps   float64       // bits per second; 0 = unlimited
	QueuePkts int           // drop-tail queue limit in packets; 0 = unlimited
	Loss      float64       // probability in [0, 1]
}

// Stats count what one direction did.
type Stats struct {
	Packets, Bytes, Lost, QueueDrops uint64
}

// pipe is one direction of the link: it decides, for each packet at the time it
// arrives, whether it is dropped and when it is delivered. It is a pure model
// (time is passed in), so that it can be tested without devices.
type pipe struct {
	p         Params
	rng       *rand.Rand
	mu        sync.Mutex
	departs   []time.Time // departure times of the packets still in the queue
	lastDep   time.Time
	lastDeliv time.Time
	stats     Stats
}

func newPipe(p Params, seed int64) *pipe {
	return &pipe{p: p, rng: rand.New(rand.NewSource(seed))}
}

// admit returns when a packet of size bytes arriving at now is delivered, or
// ok=false if the link drops it.
func (l *pipe) admit(now time.Time, size int) (deliver time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p.Loss > 0 && l.rng.Float64() < l.p.Loss {
		l.stats.Lost++
		return time.Time{}, false
	}
	// Packets that have finished serialising have left the queue.
	i := 0
	for i < len(l.departs) && !l.departs[i].After(now) {
		i++
	}
	l.departs = l.departs[i:]
	if l.p.QueuePkts > 0 && len(l.departs) >= l.p.QueuePkts {
		l.stats.QueueDrops++
		return time.Time{}, false
	}
	start := now
	if l.lastDep.After(start) {
		start = l.lastDep
	}
	dep := start
	if l.p.RateBps > 0 {
		dep = start.Add(time.Duration(float64(size*8) / l.p.RateBps * float64(time.Second)))
	}
	l.lastDep = dep
	l.departs = append(l.departs, dep)
	deliver = dep.Add(l.p.Delay)
	if l.p.Jitter > 0 {
		deliver = deliver.Add(time.Duration((l.rng.Float64()*2 - 1) * float64(l.p.Jitter)))
	}
	if deliver.Before(l.lastDeliv) { // FIFO: jitter does not reorder
		deliver = l.lastDeliv
	}
	l.lastDeliv = deliver
	l.stats.Packets++
	l.stats.Bytes += uint64(size)
	return deliver, true
}

func (l *pipe) snapshot() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}
