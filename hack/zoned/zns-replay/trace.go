package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// event is one line of a trace: a checkpoint created (with its image's
// size) or deleted.
type event struct {
	TimeS      float64
	Op         string // "create" or "delete"
	Container  string
	Checkpoint string
	Bytes      int64
	Hint       float64 // the lifetime in seconds the create declares (0: none)
	Death      float64 // when it is deleted, +Inf never (markDeaths)
	Line       int
}

type key struct{ container, checkpoint string }

func (e event) key() key { return key{e.Container, e.Checkpoint} }

var traceHeader = []string{"time_s", "op", "container", "checkpoint", "bytes"}

// hintColumn is the trace's optional sixth column: the lifetime in seconds
// a create declares (a retention policy's interval times the checkpoints it
// keeps), the hint a ZenFS-style placement separates data by; empty or 0 on
// a create that declares none, and on deletes.
const hintColumn = "hint_s"

// readTrace reads a trace CSV (docs/patches.md, "Replaying placement"),
// refusing anything a replay could misread; every error names the file and
// the line.
func readTrace(path string) ([]event, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %v", path, pe.Err)
		}
		return nil, err
	}
	defer f.Close()
	return parseTrace(f, path)
}

func parseTrace(r io.Reader, path string) ([]event, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s:1: empty trace (want the header %s)", path, strings.Join(traceHeader, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("%s:1: %v", path, err)
	}
	hinted := equalTrimmed(header, append(slices.Clone(traceHeader), hintColumn))
	if !hinted && !equalTrimmed(header, traceHeader) {
		return nil, fmt.Errorf("%s:1: bad header %q (want %s, and optionally %s)", path, strings.Join(header, ","), strings.Join(traceHeader, ","), hintColumn)
	}
	var events []event
	live := map[key]bool{}
	last := 0.0
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %v", path, pe.Line, pe.Err)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		line, _ := cr.FieldPos(0)
		if len(row) == 1 && strings.TrimSpace(row[0]) == "" {
			continue
		}
		e, err := parseEvent(row, line, path, hinted)
		if err != nil {
			return nil, err
		}
		if e.TimeS < last {
			return nil, fmt.Errorf("%s:%d: time goes backwards (%s after %s)", path, line, fmtG(e.TimeS), fmtG(last))
		}
		last = e.TimeS
		if e.Op == "create" {
			if live[e.key()] {
				return nil, fmt.Errorf("%s:%d: create of %s/%s, which already exists", path, line, e.Container, e.Checkpoint)
			}
			live[e.key()] = true
		} else {
			if !live[e.key()] {
				return nil, fmt.Errorf("%s:%d: delete of unknown checkpoint %s/%s", path, line, e.Container, e.Checkpoint)
			}
			delete(live, e.key())
		}
		events = append(events, e)
	}
	markDeaths(events)
	return events, nil
}

func equalTrimmed(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.TrimSpace(a[i]) != b[i] {
			return false
		}
	}
	return true
}

func parseEvent(row []string, line int, path string, hinted bool) (event, error) {
	cols := traceHeader
	if hinted {
		cols = append(slices.Clone(traceHeader), hintColumn)
	}
	if len(row) != len(cols) {
		return event{}, fmt.Errorf("%s:%d: want %d fields (%s), got %d", path, line, len(cols), strings.Join(cols, ","), len(row))
	}
	f := make([]string, len(row))
	for i, x := range row {
		f[i] = strings.TrimSpace(x)
	}
	t, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return event{}, fmt.Errorf("%s:%d: time_s: %q is not a number", path, line, f[0])
	}
	if math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
		return event{}, fmt.Errorf("%s:%d: time_s: want a time >= 0, got %q", path, line, f[0])
	}
	e := event{TimeS: t, Op: f[1], Container: f[2], Checkpoint: f[3], Line: line}
	if e.Op != "create" && e.Op != "delete" {
		return event{}, fmt.Errorf("%s:%d: unknown op %q (want create or delete)", path, line, e.Op)
	}
	if e.Container == "" || e.Checkpoint == "" {
		return event{}, fmt.Errorf("%s:%d: container and checkpoint must not be empty", path, line)
	}
	if hinted && f[5] != "" {
		h, err := strconv.ParseFloat(f[5], 64)
		if err != nil || math.IsNaN(h) || math.IsInf(h, 0) || h < 0 {
			return event{}, fmt.Errorf("%s:%d: %s: want a lifetime in seconds >= 0 (or nothing), got %q", path, line, hintColumn, f[5])
		}
		if e.Op == "delete" && h != 0 {
			return event{}, fmt.Errorf("%s:%d: %s: a delete takes no hint, got %q", path, line, hintColumn, f[5])
		}
		e.Hint = h
	}
	if e.Op == "delete" {
		if f[4] != "" && f[4] != "0" {
			return event{}, fmt.Errorf("%s:%d: bytes: a delete takes no size (empty or 0), got %q", path, line, f[4])
		}
		return e, nil
	}
	n, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil {
		return event{}, fmt.Errorf("%s:%d: bytes: %q is not a whole number of bytes", path, line, f[4])
	}
	if n < 0 {
		return event{}, fmt.Errorf("%s:%d: bytes: negative size %d", path, line, n)
	}
	if n == 0 {
		return event{}, fmt.Errorf("%s:%d: bytes: a create of 0 bytes (a checkpoint image is never empty)", path, line)
	}
	e.Bytes = n
	return e, nil
}

// groups splits events into steps: consecutive creates at the same time are
// one group (taken together); every delete is a step of its own.
func groups(events []event) [][]event {
	var out [][]event
	for i := 0; i < len(events); {
		j := i + 1
		if events[i].Op == "create" {
			for j < len(events) && events[j].Op == "create" && events[j].TimeS == events[i].TimeS {
				j++
			}
		}
		out = append(out, events[i:j])
		i = j
	}
	return out
}

// fmtG formats a float as Python's "%g" does for the values a trace holds.
func fmtG(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
