package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
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

// parseRate takes tc-style rates: 100mbit, 20Mbit, 1gbit, 500kbit, 1000000 (bit/s).
func parseRate(s string) (float64, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	l := strings.ToLower(s)
	mult := 1.0
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}} {
		if strings.HasSuffix(l, u.suffix) {
			l, mult = strings.TrimSuffix(l, u.suffix), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(l, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad rate %q (want e.g. 100mbit)", s)
	}
	return v * mult, nil
}

func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 || v > 100 {
		return 0, fmt.Errorf("bad percentage %q (want 0%%..100%%)", s)
	}
	return v / 100, nil
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
		delay   = flag.Duration("delay", 0, "one-way delay, each direction (RTT/2)")
		jitter  = flag.Duration("jitter", 0, "uniform jitter added to the delay (no reordering)")
		rate    = flag.String("rate", "", "rate each direction, e.g. 100mbit (empty: unlimited)")
		queue   = flag.Int("queue", 1000, "drop-tail queue limit, packets per direction (0: unlimited)")
		loss    = flag.String("loss", "0%", "random loss each direction")
		seed    = flag.Int64("seed", 1, "random seed for loss and jitter")
		statsTo = flag.String("stats", "", "write per-direction counters as JSON here on exit")
	)
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
	if *delay < 0 || *jitter < 0 || *queue < 0 {
		fail(fmt.Errorf("delay, jitter and queue must not be negative"))
	}
	p := Params{Delay: *delay, Jitter: *jitter, RateBps: r, QueuePkts: *queue, Loss: l}
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
