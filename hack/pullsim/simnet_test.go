package pullconcurrency

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The network model the controller is tested against: blob downloads over
// TCP connections through a bottleneck with a drop-tail queue.
//
// It is a model of what costs time in a pull, not of TCP in every detail:
//
//   - Each connection has a congestion window, as Linux's default CUBIC
//     keeps it: slow start from 10 segments (doubling per round trip,
//     ACK-clocked) until a loss or until HyStart sees the round trip grow
//     (by an eighth, 4-16 ms), then the cubic growth (C = 0.4) with its
//     Reno-friendly floor; a loss takes it to 0.7 times (fast recovery,
//     once per round trip). A loss while the window is below four
//     segments, or of a retransmission, is a retransmission timeout
//     instead: nothing is sent for the RTO (at least 200 ms, doubling while
//     it repeats) and the window starts again from one segment. A
//     connection idle for an RTO restarts from the initial window (Linux's
//     tcp_slow_start_after_idle).
//   - Lost bytes are sent again, and the receiver delivers bytes in order:
//     bytes behind a hole wait for its retransmission (the reader sees
//     nothing meanwhile).
//   - The bottleneck serves its rate from a drop-tail queue; what does not
//     fit is dropped. Queueing delays every byte behind it, the first byte
//     of a new response too. Random loss drops each packet with the link's
//     probability; a stream's rate then follows the Mathis formula,
//     MSS/RTT * 1.22/sqrt(p), on its own.
//   - The registry can cap each connection (a CDN's per-connection limit),
//     answers a request after its server time, and can answer 429 above a
//     number of downloads at once.
//   - A request costs a round trip (plus jitter), a new connection one
//     more; a pull opens its own connections (the registry client is built
//     per pull) and keeps them alive between blobs. Through a proxy, the
//     connection set-up measures the proxy, not the registry.
//   - A layer is unpacked when it and the layers below it are in: the pull
//     ends when the last layer is unpacked, at the unpacking rate given
//     (one layer at a time). Streams that all end together leave all the
//     unpacking to the end; that is what too many streams for large layers
//     cost on the test links (10 x 10 MiB over 140 ms took 14.6 s with 10
//     streams and 11.5 s with 3).
//   - Two registries can be pulled from at once, over bottlenecks of their
//     own or through one they share.
//
// Every random draw comes from a seeded generator: a run is reproducible.

const (
	simMSS    = 1448
	simMinRTO = 200 * time.Millisecond
)

// simQueue is a bottleneck: a rate and a drop-tail queue.
type simQueue struct {
	rate  float64 // bytes/s
	limit float64 // bytes the queue holds
	q     float64 // bytes queued
	rng   *rand.Rand

	arrivals []simArrival // this step's
	drops    float64      // bytes dropped, in all
}

type simArrival struct {
	c     *simConn
	bytes float64
	retx  bool
}

// simLink is the path from one registry to the client.
type simLink struct {
	rtt       time.Duration // propagation round trip
	jitter    time.Duration // extra delay of a request or connection set-up, uniform in [0, jitter)
	bandwidth float64       // bytes/s of the bottleneck
	// queue is the bottleneck's buffer in packets (default 1000, as the
	// test links' emulator).
	queue   int
	loss    float64 // probability that a data packet is lost
	perConn float64 // bytes/s the registry sends at most per connection; 0: no cap
	// proxyRTT, when set, is the round trip to an HTTPS proxy the daemon
	// connects through: what a connection's set-up measures.
	proxyRTT   time.Duration
	serverTime time.Duration // the registry's time to answer a request
	throttleAt int           // the registry answers 429 above this many downloads at once (0: never)
	retryAfter time.Duration // the pull retries a blob refused with 429 after this
}

func (l simLink) newQueue() *simQueue {
	n := l.queue
	if n == 0 {
		n = 1000
	}
	return &simQueue{rate: l.bandwidth, limit: float64(n * simMSS), rng: rand.New(rand.NewPCG(uint64(l.rtt), 0xd209))}
}

// simConn is one TCP connection from the client to a registry.
type simConn struct {
	reg *simReg

	cwnd, ssthresh float64
	wmax           float64   // the window the cubic growth aims at (CUBIC's W_max)
	k              float64   // seconds from the epoch to wmax (CUBIC's K)
	epoch          time.Time // the start of the cubic growth: the last loss, or the end of slow start
	minRTT         time.Duration
	inflight       float64
	retx           float64 // lost bytes to send again
	missing        float64 // lost bytes the receiver has not got yet: later bytes wait
	held           float64 // bytes received behind a hole
	recoverUntil   time.Time
	rtoUntil       time.Time
	backoff        int
	lastSent       time.Time
	tokens         float64 // per-connection cap: what the registry may send now

	pipe []simPkt // bytes sent and not yet acknowledged or found lost, in order
	dlv  int      // pipe[:dlv] have been delivered

	s        *simStream // the response on the connection
	serverAt time.Time  // when the registry starts sending it
	toSend   float64    // its bytes not sent yet
}

type simPkt struct {
	sentAt, deliverAt, ackAt time.Time
	bytes                    float64
	lost, retx               bool
}

// simStream is one blob download.
type simStream struct {
	reg      *simReg
	size     float64
	order    int64
	d        *Download
	w        *waiter
	c        *simConn
	reqAt    time.Time     // the request was written (after any connection set-up)
	connAt   time.Time     // the connection set-up ends
	connDur  time.Duration // how long the set-up took (0: a connection kept alive)
	got      float64
	read     int64 // bytes reported to the controller
	first    bool  // the response has begun
	throttle bool
	retryAt  time.Time
	done     bool
	doneAt   time.Time
}

// simReg is one registry being pulled from: its controller, its path and
// the blobs of the pull.
type simReg struct {
	h       *host
	link    simLink
	q       *simQueue
	streams []*simStream
	conns   []*simConn
	idle    []*simConn
	rng     *rand.Rand
	// unpack is the rate, in bytes/s, at which layers are unpacked (0: the
	// pull ends with the last download).
	unpack float64

	limits    []int // the limit after each change
	maxActive int
	elapsed   time.Duration
	backoffs  int
}

// simRun pulls the blobs of every registry at once, all of them asked for
// at the start as the pull code does, and returns when the last registry
// is done. The registries' elapsed times are in each simReg.
func simRun(t *testing.T, clock *time.Time, regs ...*simReg) time.Duration {
	t.Helper()
	start := *clock
	minRTT := time.Hour
	for _, r := range regs {
		minRTT = min(minRTT, r.link.rtt)
		b0 := r.h.backoffs
		r.limits = nil
		r.h.onChange = func(ev Event) { r.limits = append(r.limits, ev.Limit) }
		defer func() { r.backoffs = r.h.backoffs - b0 }()
	}
	dt := min(max(minRTT/20, time.Millisecond), 5*time.Millisecond)
	queues := map[*simQueue]bool{}
	for _, r := range regs {
		queues[r.q] = true
	}
	for step := 0; ; step++ {
		now := *clock
		if now.Sub(start) > 30*time.Minute {
			t.Fatalf("simulation did not finish")
		}
		all := true
		for _, r := range regs {
			if r.elapsed == 0 {
				if r.step(now, dt) {
					r.elapsed = r.unpacked().Sub(start)
				} else {
					all = false
				}
			}
		}
		for q := range queues {
			q.serve(now, dt)
		}
		if all {
			for _, r := range regs {
				r.h.onChange = nil
			}
			var end time.Duration
			for _, r := range regs {
				end = max(end, r.elapsed)
			}
			return end
		}
		*clock = now.Add(dt)
	}
}

// unpacked is when the last layer is unpacked: each one after its download
// and the layer below it.
func (r *simReg) unpacked() time.Time {
	var end time.Time
	for _, s := range r.streams {
		if s.doneAt.After(end) {
			end = s.doneAt
		}
		if r.unpack > 0 {
			end = end.Add(seconds(s.size / r.unpack))
		}
	}
	return end
}

// newSimReg prepares a pull of blobs of the given sizes from h over link.
func newSimReg(h *host, link simLink, q *simQueue, sizes []float64, seed uint64) *simReg {
	if q == nil {
		q = link.newQueue()
	}
	r := &simReg{h: h, link: link, q: q, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
	for i, s := range sizes {
		r.streams = append(r.streams, &simStream{reg: r, size: s, order: int64(i)})
	}
	return r
}

func (r *simReg) jitter() time.Duration {
	if r.link.jitter <= 0 {
		return 0
	}
	return time.Duration(r.rng.Int64N(int64(r.link.jitter)))
}

// queueDelay is how long a byte sent now waits in the bottleneck.
func (r *simReg) queueDelay() time.Duration {
	return seconds(r.q.q / r.q.rate)
}

// step advances the pull by dt; it reports whether every blob is done.
func (r *simReg) step(now time.Time, dt time.Duration) bool {
	h := r.h
	// ask for slots, take the ones handed out, start requests
	active := 0
	for _, s := range r.streams {
		if s.done {
			continue
		}
		if s.d == nil && s.w == nil && !now.Before(s.retryAt) {
			s.d, s.w = h.enqueue(s.size, s.order)
			if s.d != nil {
				r.start(s, now)
			}
		}
		if s.w != nil {
			select {
			case <-s.w.ch:
				s.d = h.take(s.w)
				s.w = nil
				r.start(s, now)
			default:
			}
		}
		if s.d != nil {
			active++
		}
	}
	r.maxActive = max(r.maxActive, active)

	for _, s := range r.streams {
		if s.done || s.d == nil {
			continue
		}
		c := s.c
		if !s.connAt.IsZero() && !now.Before(s.connAt) {
			// the connection is set up: the request goes out
			s.connAt = time.Time{}
			if s.connDur > 0 {
				s.d.connected(s.connDur)
				s.connDur = 0
			}
			s.reqAt = now
			c.serverAt = now.Add(r.link.rtt/2 + r.jitter() + r.link.serverTime)
			if s.throttle {
				// the 429 comes back right away
				c.serverAt = now.Add(r.link.rtt + r.link.serverTime)
			}
		}
		if !s.reqAt.IsZero() && s.throttle && !now.Before(c.serverAt) {
			s.d.response(429, now.Sub(s.reqAt))
			s.d.finish(true)
			s.d, s.c, s.reqAt = nil, nil, time.Time{}
			s.retryAt = now.Add(r.link.retryAfter)
			r.idle = append(r.idle, c)
			c.s = nil
			continue
		}
	}
	for _, c := range r.conns {
		c.receive(now)
		if c.s != nil {
			c.send(now, dt)
		}
	}
	for _, s := range r.streams {
		if !s.done {
			return false
		}
	}
	return true
}

// start sends the request of a stream that got a slot: on an idle
// connection, or on a new one.
func (r *simReg) start(s *simStream, now time.Time) {
	s.throttle = r.link.throttleAt > 0 && len(r.h.active) > r.link.throttleAt
	var c *simConn
	if n := len(r.idle); n > 0 {
		c, r.idle = r.idle[n-1], r.idle[:n-1]
		s.connAt, s.connDur = now, 0
	} else {
		c = &simConn{reg: r, cwnd: initialWindow, ssthresh: math.Inf(1)}
		r.conns = append(r.conns, c)
		connect := r.link.rtt + r.jitter()
		s.connAt, s.connDur = now.Add(connect), connect
		if r.link.proxyRTT > 0 {
			// The set-up measured is the proxy's; the tunnel to the
			// registry (CONNECT) takes a round trip of the path more
			// before the request goes out.
			s.connDur = r.link.proxyRTT + r.jitter()
			s.connAt = now.Add(s.connDur + r.link.rtt)
		}
	}
	c.s = s
	c.toSend = s.size
	c.serverAt = time.Time{}
	s.c = c
	s.reqAt = time.Time{}
	s.first = false
	s.got, s.read = 0, 0
}

// receive delivers the bytes that have arrived, in order, and processes the
// acknowledgements and losses that are due.
func (c *simConn) receive(now time.Time) {
	var in float64
	for c.dlv < len(c.pipe) && !now.Before(c.pipe[c.dlv].deliverAt) {
		in += c.arrive(c.pipe[c.dlv])
		c.dlv++
	}
	for len(c.pipe) > 0 && !now.Before(c.pipe[0].ackAt) {
		p := c.pipe[0]
		c.pipe = c.pipe[1:]
		if c.dlv > 0 {
			c.dlv--
		} else {
			in += c.arrive(p)
		}
		c.inflight -= p.bytes
		if p.lost {
			c.lost(now, p)
			continue
		}
		c.backoff = 0
		c.acked(now, p)
	}
	if in > 0 {
		c.deliver(now, in)
	}
}

// arrive is the receiver's side of p: the bytes it can hand to the reader.
func (c *simConn) arrive(p simPkt) (in float64) {
	switch {
	case p.lost && !p.retx:
		c.missing += p.bytes // a hole: what follows waits for it
	case p.lost:
	case p.retx:
		c.missing -= p.bytes
		in = p.bytes
		if c.missing <= 1e-6 {
			c.missing = 0
			in += c.held
			c.held = 0
		}
	case c.missing > 0:
		c.held += p.bytes
	default:
		in = p.bytes
	}
	return in
}

// acked grows the window for the bytes of p.
func (c *simConn) acked(now time.Time, p simPkt) {
	rtt := p.ackAt.Sub(p.sentAt)
	if c.minRTT == 0 || rtt < c.minRTT {
		c.minRTT = rtt
	}
	if c.cwnd < c.ssthresh {
		// HyStart: leave slow start when the round trip grows
		if rtt >= c.minRTT+min(max(c.minRTT/8, 4*time.Millisecond), 16*time.Millisecond) && c.cwnd >= 16*simMSS {
			c.ssthresh = c.cwnd
			c.wmax, c.k, c.epoch = c.cwnd, 0, now
			return
		}
		c.cwnd += p.bytes
		return
	}
	if c.epoch.IsZero() {
		c.wmax, c.k, c.epoch = c.cwnd, 0, now
	}
	// CUBIC, in segments and seconds
	wmax := c.wmax / simMSS
	t := now.Sub(c.epoch).Seconds() + c.minRTT.Seconds()
	d := t - c.k
	target := cubicC*d*d*d + wmax
	reno := wmax*cubicBeta + 3*(1-cubicBeta)/(1+cubicBeta)*t/c.minRTT.Seconds()
	target = max(target, reno) * simMSS
	if target > c.cwnd {
		c.cwnd += min((target-c.cwnd)*p.bytes/c.cwnd, p.bytes)
	}
}

const cubicC, cubicBeta = 0.4, 0.7

// reduce starts a cubic epoch at a loss: the window shrinks to 0.7 times,
// the growth aims at where it was (less, when it was already below the
// last aim: fast convergence).
func (c *simConn) reduce(now time.Time) {
	w := c.cwnd
	if w < c.wmax {
		w = w * (1 + cubicBeta) / 2
	}
	c.wmax, c.epoch = w, now
	c.k = math.Cbrt(w / simMSS * (1 - cubicBeta) / cubicC)
	c.ssthresh = max(c.cwnd*cubicBeta, 2*simMSS)
}

func (c *simConn) lost(now time.Time, p simPkt) {
	c.retx += p.bytes
	if now.Before(c.recoverUntil) && !p.retx {
		return // the same loss episode
	}
	r := c.reg
	srtt := r.link.rtt + r.queueDelay()
	if c.cwnd < 4*simMSS {
		// too few packets for duplicate ACKs: the retransmission timer
		// fires
		rto := max(simMinRTO, 2*srtt) << min(c.backoff, 6)
		c.backoff++
		c.reduce(now)
		c.cwnd = simMSS
		c.rtoUntil = p.sentAt.Add(rto)
		c.recoverUntil = c.rtoUntil.Add(srtt)
		return
	}
	c.reduce(now)
	c.cwnd = c.ssthresh
	c.recoverUntil = now.Add(srtt)
}

// deliver hands in bytes of the response to the reader.
func (c *simConn) deliver(now time.Time, in float64) {
	s := c.s
	if s == nil || s.d == nil {
		return
	}
	if !s.first {
		s.first = true
		s.d.response(200, now.Sub(s.reqAt))
	}
	s.got = min(s.got+in, s.size)
	if n := int64(s.got) - s.read; n > 0 {
		s.read += n
		s.d.read(int(n))
	}
	if s.got >= s.size-0.5 {
		s.done = true
		s.doneAt = now
		s.d.finish(false)
		s.d = nil
		c.s = nil
		c.reg.idle = append(c.reg.idle, c)
	}
}

// send puts what the window, the registry's cap and the response allow
// into the bottleneck.
func (c *simConn) send(now time.Time, dt time.Duration) {
	r := c.reg
	if c.serverAt.IsZero() || now.Before(c.serverAt) || now.Before(c.rtoUntil) {
		return
	}
	srtt := r.link.rtt + r.queueDelay()
	if c.inflight <= 0 && !c.lastSent.IsZero() && now.Sub(c.lastSent) > max(simMinRTO, 2*srtt) {
		c.cwnd = min(c.cwnd, initialWindow)
	}
	n := min(c.cwnd-c.inflight, c.retx+c.toSend)
	if r.link.perConn > 0 {
		c.tokens = min(c.tokens+r.link.perConn*dt.Seconds(), r.link.perConn*0.01+simMSS)
		n = min(n, c.tokens)
	}
	if n <= 1e-9 || n < 1 && c.retx+c.toSend >= 1 {
		return // nothing to send, or less than a byte of what is left
	}
	if r.link.perConn > 0 {
		c.tokens -= n
	}
	c.lastSent = now
	c.inflight += n
	retx := min(n, c.retx)
	c.retx -= retx
	c.toSend -= n - retx
	for _, part := range []struct {
		bytes float64
		retx  bool
	}{{retx, true}, {n - retx, false}} {
		b := part.bytes
		if b <= 0 {
			continue
		}
		if lost := r.randomLoss(b); lost > 0 {
			at := now.Add(r.queueDelay() + dt + r.link.rtt/2)
			c.pipe = append(c.pipe, simPkt{sentAt: now, deliverAt: at, ackAt: at.Add(r.link.rtt / 2), bytes: lost, lost: true, retx: part.retx})
			b -= lost
		}
		if b > 0 {
			r.q.arrivals = append(r.q.arrivals, simArrival{c: c, bytes: b, retx: part.retx})
		}
	}
}

// randomLoss is how many of b bytes the link loses at random.
func (r *simReg) randomLoss(b float64) float64 {
	if r.link.loss <= 0 {
		return 0
	}
	pkts := b / simMSS
	mean := pkts * r.link.loss
	// Poisson, by inversion: the losses of one step are few
	k, p, u := 0, math.Exp(-mean), r.rng.Float64()
	for sum := p; u > sum && k < 1000; {
		k++
		p *= mean / float64(k)
		sum += p
	}
	return min(b, float64(k)*simMSS)
}

// serve moves one step of arrivals through the bottleneck: what does not fit
// in the queue is dropped, the rest is delivered after the queue's delay
// and half a round trip, and acknowledged half a round trip later.
func (q *simQueue) serve(now time.Time, dt time.Duration) {
	var in float64
	for _, a := range q.arrivals {
		in += a.bytes
	}
	wait := seconds(q.q / q.rate)
	q.q = max(q.q+in-q.rate*dt.Seconds(), 0)
	dropped := make([]float64, len(q.arrivals))
	if q.q > q.limit {
		// Drop-tail drops the packets that find the queue full, whichever
		// flow sent them: a packet at a time, each from a flow drawn in
		// proportion to what it sent.
		over := q.q - q.limit
		q.drops += over
		q.q = q.limit
		for over > 0 {
			b := min(over, simMSS)
			over -= b
			x := q.rng.Float64() * in
			for i, a := range q.arrivals {
				if x -= a.bytes; x <= 0 || i == len(q.arrivals)-1 {
					d := min(b, a.bytes-dropped[i])
					dropped[i] += d
					over += b - d
					break
				}
			}
		}
	}
	for i, a := range q.arrivals {
		c := a.c
		half := c.reg.link.rtt / 2
		if ok := a.bytes - dropped[i]; ok > 0 {
			at := now.Add(wait + dt + half)
			c.pipe = append(c.pipe, simPkt{sentAt: now, deliverAt: at, ackAt: at.Add(half), bytes: ok, retx: a.retx})
		}
		if dropped := dropped[i]; dropped > 1e-9 {
			// found lost when the bytes sent after it are acknowledged
			at := now.Add(wait + dt + half)
			c.pipe = append(c.pipe, simPkt{sentAt: now, deliverAt: at, ackAt: at.Add(half), bytes: dropped, lost: true, retx: a.retx})
		}
	}
	q.arrivals = q.arrivals[:0]
}
