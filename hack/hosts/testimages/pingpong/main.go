// Command pingpong measures TCP round trips of a small message between two
// processes, the communication pattern of a message-passing job (seed 002:
// MPI tasks on Docker's virtual network against bare metal).
//
//	pingpong server [-listen :7000] [-size 64]
//	pingpong client -connect HOST:PORT [-n 5000] [-warmup 200] [-size 64]
//
// The server echoes every message of -size bytes on each connection until the
// peer closes it. The client sends a message, waits for the whole echo, and
// repeats: -warmup round trips untimed, then -n timed one by one. It prints
// one JSON line: the mean, median, 90th and 99th percentile, min and max
// round trip in microseconds. TCP_NODELAY is on (Go's default), so every
// message leaves at once.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "server":
		fs := flag.NewFlagSet("server", flag.ExitOnError)
		listen := fs.String("listen", ":7000", "address to listen on")
		size := fs.Int("size", 64, "message size in bytes")
		_ = fs.Parse(os.Args[2:])
		if err := serve(*listen, *size); err != nil {
			fatal(err)
		}
	case "client":
		fs := flag.NewFlagSet("client", flag.ExitOnError)
		addr := fs.String("connect", "", "server address, HOST:PORT")
		n := fs.Int("n", 5000, "timed round trips")
		warmup := fs.Int("warmup", 200, "untimed round trips first")
		size := fs.Int("size", 64, "message size in bytes")
		wait := fs.Duration("wait", 10*time.Second, "how long to retry connecting")
		_ = fs.Parse(os.Args[2:])
		if *addr == "" || *n < 1 || *size < 1 || *warmup < 0 {
			usage()
		}
		r, err := client(*addr, *n, *warmup, *size, *wait)
		if err != nil {
			fatal(err)
		}
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: pingpong server [-listen :7000] [-size 64]\n"+
		"       pingpong client -connect HOST:PORT [-n 5000] [-warmup 200] [-size 64]")
	os.Exit(2)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "pingpong:", err)
	os.Exit(1)
}

func serve(addr string, size int) error {
	if size < 1 {
		return errors.New("size must be at least 1")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "pingpong: listening on %s, %d-byte messages\n", ln.Addr(), size)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		os.Exit(0)
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go echo(c, size)
	}
}

func echo(c net.Conn, size int) {
	defer c.Close()
	buf := make([]byte, size)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

// Result is what the client prints, in microseconds.
type Result struct {
	RoundTrips int     `json:"round_trips"`
	Size       int     `json:"size"`
	MeanUs     float64 `json:"mean_us"`
	P50Us      float64 `json:"p50_us"`
	P90Us      float64 `json:"p90_us"`
	P99Us      float64 `json:"p99_us"`
	MinUs      float64 `json:"min_us"`
	MaxUs      float64 `json:"max_us"`
}

func dial(addr string, wait time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(wait)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil || time.Now().After(deadline) {
			return c, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func client(addr string, n, warmup, size int, wait time.Duration) (*Result, error) {
	c, err := dial(addr, wait)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	msg := make([]byte, size)
	for i := range msg {
		msg[i] = byte('a' + i%26)
	}
	back := make([]byte, size)
	trip := func() error {
		if _, err := c.Write(msg); err != nil {
			return err
		}
		_, err := io.ReadFull(c, back)
		return err
	}
	for i := 0; i < warmup; i++ {
		if err := trip(); err != nil {
			return nil, err
		}
	}
	rtt := make([]float64, n)
	for i := range rtt {
		t0 := time.Now()
		if err := trip(); err != nil {
			return nil, err
		}
		rtt[i] = float64(time.Since(t0).Nanoseconds()) / 1e3
	}
	return summarize(rtt, size), nil
}

func summarize(rtt []float64, size int) *Result {
	s := append([]float64(nil), rtt...)
	sort.Float64s(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	q := func(p float64) float64 { // nearest rank
		i := int(p*float64(len(s))+0.5) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(s) {
			i = len(s) - 1
		}
		return round(s[i])
	}
	return &Result{RoundTrips: len(s), Size: size, MeanUs: round(sum / float64(len(s))),
		P50Us: q(0.50), P90Us: q(0.90), P99Us: q(0.99), MinUs: round(s[0]), MaxUs: round(s[len(s)-1])}
}

func round(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }
