package main

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Unix(1000, 0)

func TestPipeDelayOnly(t *testing.T) {
	p := newPipe(Params{Delay: 35 * time.Millisecond}, 1)
	at, ok := p.admit(t0, 1500)
	if !ok || at.Sub(t0) != 35*time.Millisecond {
		t.Fatalf("delivery %v ok=%v, want 35ms", at.Sub(t0), ok)
	}
}

func TestPipeRateSerialises(t *testing.T) {
	// 100 packets of 1250 bytes at 10 Mbit/s: 1 ms each, back to back.
	p := newPipe(Params{RateBps: 10e6}, 1)
	var last time.Time
	for i := 0; i < 100; i++ {
		at, ok := p.admit(t0, 1250)
		if !ok {
			t.Fatalf("packet %d dropped with an unlimited queue", i)
		}
		last = at
	}
	if got := last.Sub(t0); got != 100*time.Millisecond {
		t.Fatalf("last packet leaves after %v, want 100ms", got)
	}
}

func TestPipeIdleLinkDoesNotBank(t *testing.T) {
	// Idle time is not credit: a packet after a pause still takes its own
	// serialisation time.
	p := newPipe(Params{RateBps: 8e6}, 1)
	p.admit(t0, 1000)
	at, _ := p.admit(t0.Add(time.Second), 1000)
	if got := at.Sub(t0.Add(time.Second)); got != time.Millisecond {
		t.Fatalf("got %v, want 1ms", got)
	}
}

func TestPipeDropTail(t *testing.T) {
	p := newPipe(Params{RateBps: 8e6, QueuePkts: 10}, 1)
	admitted := 0
	for i := 0; i < 50; i++ {
		if _, ok := p.admit(t0, 1000); ok {
			admitted++
		}
	}
	if admitted != 10 {
		t.Fatalf("admitted %d packets into a 10-packet queue at one instant", admitted)
	}
	if s := p.snapshot(); s.QueueDrops != 40 {
		t.Fatalf("queue drops = %d, want 40", s.QueueDrops)
	}
	// Once the queue has drained, packets are admitted again.
	if _, ok := p.admit(t0.Add(20*time.Millisecond), 1000); !ok {
		t.Fatal("packet dropped after the queue drained")
	}
}

func TestPipeLossRate(t *testing.T) {
	p := newPipe(Params{Loss: 0.05}, 42)
	const n = 100000
	for i := 0; i < n; i++ {
		p.admit(t0.Add(time.Duration(i)*time.Millisecond), 100)
	}
	got := float64(p.snapshot().Lost) / n
	if math.Abs(got-0.05) > 0.005 {
		t.Fatalf("loss %.4f, want 0.05 +- 0.005", got)
	}
}

func TestPipeJitterKeepsOrder(t *testing.T) {
	p := newPipe(Params{Delay: 20 * time.Millisecond, Jitter: 10 * time.Millisecond}, 7)
	var prev time.Time
	for i := 0; i < 1000; i++ {
		now := t0.Add(time.Duration(i) * 100 * time.Microsecond)
		at, _ := p.admit(now, 100)
		if at.Before(prev) {
			t.Fatalf("packet %d delivered before its predecessor", i)
		}
		if d := at.Sub(now); d < 10*time.Millisecond || d > 31*time.Millisecond {
			t.Fatalf("packet %d delay %v outside 20ms +- 10ms", i, d)
		}
		prev = at
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"100mbit": 100e6, "20Mbit": 20e6, "1gbit": 1e9, "500kbit": 500e3, "1000": 1000, "": 0} {
		got, err := parseRate(in)
		if err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"fast", "-1mbit", "10mb/s"} {
		if _, err := parseRate(bad); err == nil {
			t.Errorf("parseRate(%q) accepted", bad)
		}
	}
}
