package main

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"time"
)

// The unit spellings of hack/ab/units.py (its UNITS, CASELESS and
// EXAMPLES), with the same values; both parsers are tested against
// hack/ab/units-cases.txt.
var units = map[string]map[string]string{
	"size":     {"B": "1", "KiB": "1024", "MiB": "1048576", "GiB": "1073741824", "KB": "1000", "MB": "1000000", "GB": "1000000000"},
	"rate":     {"bit": "1", "kbit": "1000", "mbit": "1000000", "gbit": "1000000000"},
	"duration": {"us": "0.000001", "µs": "0.000001", "ms": "0.001", "s": "1", "m": "60"},
	"percent":  {"%": "0.01"},
}

var (
	caseless = map[string]bool{"rate": true}
	examples = map[string]string{"size": "512KiB, 10MiB", "rate": "100mbit, 20mbit", "duration": "35ms, 1.5s", "percent": "0%, 0.5%"}
	words    = map[string]string{"B": "bytes", "bit": "bits per second", "us": "microseconds", "ms": "milliseconds", "s": "seconds", "%": "percent"}
	number   = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(.*)$`)
)

// parseQuantity is hack/ab/units.py's parse: s (e.g. "100mbit") in kind's
// base unit (bytes, bits per second, seconds, a fraction); plain is the
// unit a bare number is in ("": a bare number is refused).
func parseQuantity(kind, s, plain string) (float64, error) {
	table := units[kind]
	name := kind
	if kind == "percent" {
		name = "percentage"
	}
	bad := func(why string) error {
		want := "want e.g. " + examples[kind]
		if plain != "" {
			w, ok := words[plain]
			if !ok {
				w = plain
			}
			want += ", or a plain number of " + w
		}
		return fmt.Errorf("bad %s %q (%s%s)", name, s, want, why)
	}
	m := number.FindStringSubmatch(s)
	if m == nil {
		return 0, bad("")
	}
	unit := m[2]
	if unit == "" {
		unit = plain
	}
	mult, ok := table[unit]
	if !ok && caseless[kind] {
		for u, v := range table {
			if strings.EqualFold(u, unit) {
				mult, ok = v, true
			}
		}
	}
	if !ok || unit == "" {
		return 0, bad("")
	}
	v, _ := new(big.Rat).SetString(m[1])
	f, _ := new(big.Rat).SetString(mult)
	v.Mul(v, f)
	if kind == "percent" && v.Cmp(big.NewRat(1, 1)) > 0 {
		return 0, bad("; at most 100%")
	}
	out, _ := v.Float64()
	return out, nil
}

// durationFlag is a flag.Value: a duration as parseQuantity takes it, a
// plain number in milliseconds.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return "0"
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	v, err := parseQuantity("duration", s, "ms")
	if err != nil {
		return err
	}
	*f.d = time.Duration(v*float64(time.Second) + 0.5)
	return nil
}
