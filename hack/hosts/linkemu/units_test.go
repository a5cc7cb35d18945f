package main

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestUnitCases: every line of hack/ab/units-cases.txt, which
// hack/ab/units.py is tested against too.
func TestUnitCases(t *testing.T) {
	f, err := os.Open("../../ab/units-cases.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	kinds := map[string]bool{}
	seen := map[string]bool{} // kind/unit of every accepted case
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c := strings.Split(line, "|")
		if len(c) != 4 {
			t.Fatalf("bad line %q", line)
		}
		for i := range c {
			c[i] = strings.TrimSpace(c[i])
		}
		kind, text, plain, value := c[0], c[1], c[2], c[3]
		if text == `""` {
			text = ""
		}
		if plain == "-" {
			plain = ""
		}
		n++
		kinds[kind] = true
		got, err := parseQuantity(kind, text, plain)
		if value == "error" {
			if err == nil {
				t.Errorf("parseQuantity(%s, %q, %q) = %v, want an error", kind, text, plain, got)
			}
			continue
		}
		want, perr := strconv.ParseFloat(value, 64)
		if perr != nil {
			t.Fatalf("bad value in %q", line)
		}
		if err != nil || math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("parseQuantity(%s, %q, %q) = %v, %v; want %v", kind, text, plain, got, err, want)
		}
		for u := range units[kind] {
			if strings.HasSuffix(strings.ToLower(text), strings.ToLower(u)) || (u == plain && strings.TrimRight(text, "0123456789.") == "") {
				seen[kind+"/"+u] = true
			}
		}
	}
	for kind, table := range units {
		for u := range table {
			if !seen[kind+"/"+u] {
				t.Errorf("%s: no case accepts the unit %q (a spelling hack/ab/units.py may not have)", kind, u)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 40 || len(kinds) != len(units) {
		t.Fatalf("%d cases of %d kinds: the file is not what it should be", n, len(kinds))
	}
}

func TestDurationFlag(t *testing.T) {
	var d time.Duration
	f := durationFlag{&d}
	for in, want := range map[string]time.Duration{"17.500ms": 17500 * time.Microsecond, "30": 30 * time.Millisecond,
		"0": 0, "1.5s": 1500 * time.Millisecond, "250us": 250 * time.Microsecond} {
		if err := f.Set(in); err != nil || d != want {
			t.Errorf("Set(%q) = %v, %v; want %v", in, d, err, want)
		}
	}
	for _, bad := range []string{"-1ms", "1h", "fast", ""} {
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}
