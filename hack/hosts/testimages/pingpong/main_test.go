package main

import (
	"net"
	"testing"
)

func TestSummarize(t *testing.T) {
	rtt := make([]float64, 100)
	for i := range rtt {
		rtt[i] = float64(100 - i) // 100 .. 1
	}
	r := summarize(rtt, 64)
	if r.RoundTrips != 100 || r.MinUs != 1 || r.MaxUs != 100 || r.P50Us != 50 || r.P99Us != 99 || r.MeanUs != 50.5 {
		t.Fatalf("summary: %+v", r)
	}
}

func TestRoundTripsOverLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go echo(c, 32)
		}
	}()
	r, err := client(ln.Addr().String(), 300, 10, 32, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.RoundTrips != 300 || r.MinUs <= 0 || r.P50Us < r.MinUs || r.P99Us < r.P50Us || r.MaxUs < r.P99Us {
		t.Fatalf("implausible result: %+v", r)
	}
}
