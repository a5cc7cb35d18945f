package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

type end struct{ ns, dev string }

func parseEnd(s string) (end, error) {
	ns, dev, ok := strings.Cut(s, ":")
	if !ok || dev == "" {
		return end{}, fmt.Errorf("%q: want NETNS_PATH:DEVICE (NETNS_PATH may be empty)", s)
	}
	return end{ns, dev}, nil
}

// parseRate: a rate in bits per second, e.g. 100mbit, 20Mbit, 1gbit,
// 500kbit or a plain 1000000 (units.go); empty: unlimited.
func parseRate(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	return parseQuantity("rate", s, "bit")
}

// parsePercent: a loss as a fraction, from 0.5% or a plain 0.5 (percent).
func parsePercent(s string) (float64, error) {
	return parseQuantity("percent", s, "%")
}

type direction struct {
	name    string
	in, out int
	pipe    *pipe
}

type item struct {
	at  time.Time
	pkt []byte
}

func (d *direction) run() {
	ch := make(chan item, 1<<16)
	go func() {
		// time.Sleep wakes through the runtime's poller, up to a millisecond
		// late; nanosleep on a thread of its own keeps delays to microseconds.
		runtime.LockOSThread()
		for it := range ch {
			if w := time.Until(it.at); w > 0 {
				ts := syscall.NsecToTimespec(int64(w))
				for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
				}
			}
			// A write fails only if the far end is down; the packet is lost,
			// as it would be on a wire.
			_, _ = syscall.Write(d.out, it.pkt)
		}
	}()
	for {
		buf := make([]byte, 65536)
		n, err := syscall.Read(d.in, buf)
		if err != nil {
			if err == syscall.EINTR || err == syscall.EAGAIN {
				continue
			}
			fmt.Fprintf(os.Stderr, "linkemu: %s: read: %v\n", d.name, err)
			os.Exit(1)
		}
		if at, ok := d.pipe.admit(time.Now(), n); ok {
			ch <- item{at, buf[:n]}
		}
	}
}

func main() {
	var (
		aFlag   = flag.String("a", "", "first end: NETNS_PATH:TUN_DEVICE")
		bFlag   = flag.String("b", "", "second end: NETNS_PATH:TUN_DEVICE")
		delay   time.Duration
		jitter  time.Duration
		rate    = flag.String("rate", "", "rate each direction, e.g. 100mbit, or a plain number of bit/s (empty: unlimited)")
		queue   = flag.Int("queue", 1000, "drop-tail queue limit, packets per direction (0: unlimited)")
		loss    = flag.String("loss", "0%", "random loss each direction, e.g. 0.5%")
		seed    = flag.Int64("seed", 1, "random seed for loss and jitter")
		statsTo = flag.String("stats", "", "write per-direction counters as JSON here on exit")
	)
	flag.Var(durationFlag{&delay}, "delay", "one-way delay, each direction (RTT/2), e.g. 17.5ms, or a plain number of ms")
	flag.Var(durationFlag{&jitter}, "jitter", "uniform jitter added to the delay (no reordering), e.g. 500us")
	flag.Parse()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "linkemu:", err)
		os.Exit(2)
	}
	a, err := parseEnd(*aFlag)
	if err != nil {
		fail(fmt.Errorf("-a %w", err))
	}
	b, err := parseEnd(*bFlag)
	if err != nil {
		fail(fmt.Errorf("-b %w", err))
	}
	r, err := parseRate(*rate)
	if err != nil {
		fail(err)
	}
	l, err := parsePercent(*loss)
	if err != nil {
		fail(err)
	}
	if *queue < 0 {
		fail(fmt.Errorf("queue must not be negative"))
	}
	p := Params{Delay: delay, Jitter: jitter, RateBps: r, QueuePkts: *queue, Loss: l}
	fa, err := openTun(a.ns, a.dev)
	if err != nil {
		fail(err)
	}
	fb, err := openTun(b.ns, b.dev)
	if err != nil {
		fail(err)
	}
	ab := &direction{name: a.dev + "->" + b.dev, in: fa, out: fb, pipe: newPipe(p, *seed)}
	ba := &direction{name: b.dev + "->" + a.dev, in: fb, out: fa, pipe: newPipe(p, *seed+1)}
	go ab.run()
	go ba.run()
	fmt.Println("ready")

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	if *statsTo != "" {
		out, _ := json.MarshalIndent(map[string]Stats{ab.name: ab.pipe.snapshot(), ba.name: ba.pipe.snapshot()}, "", "  ")
		if err := os.WriteFile(*statsTo, append(out, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
}
