package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// base is package p of a module of its own; each case below edits it and
// says whether a package importing p could compile differently.
const base = `package p

import "fmt"

// Limit is a constant importers can use in constant expressions.
const Limit = 3

type Placer struct {
	Zones []int ` + "`json:\"zones\"`" + `
	inner inner
}

type inner struct{ n int }

func (p *Placer) Streams() int { return len(p.Zones) + p.inner.n }

func (p *Placer) reset() { p.Zones = nil }

// Hidden returns a type importers cannot name but can use.
func Hidden() hidden { return hidden{} }

type hidden struct{ Count int }

func New() *Placer { return &Placer{} }

func Describe(p *Placer) string { return fmt.Sprint(p.Streams()) }
`

func TestAPIHash(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, tc := range []struct {
		name       string
		old, new   string
		sameForUse bool
	}{
		{"a function body", "return len(p.Zones) + p.inner.n", "return p.inner.n + len(p.Zones) + 0", true},
		{"a comment", "// Limit is", "// Limit, a constant, is", true},
		{"an unexported function", "func New() *Placer", "func helper() {}\n\nfunc New() *Placer", true},
		{"a constant's value", "const Limit = 3", "const Limit = 4", false},
		{"a result type", "func (p *Placer) Streams() int {", "func (p *Placer) Streams() int64 { return 0 }\nfunc (p *Placer) old() int {", false},
		{"a pointer receiver to a value one", "func (p *Placer) Streams()", "func (p Placer) Streams()", false},
		{"a field's tag", "`json:\"zones\"`", "`json:\"zone\"`", false},
		{"an unexported field", "inner inner\n", "inner inner\n\textra bool\n", false},
		{"an unexported type's field", "type inner struct{ n int }", "type inner struct{ n, m int }", false},
		{"a type reached only through a function", "type hidden struct{ Count int }", "type hidden struct{ Count string }", false},
		{"an unexported method", "func (p *Placer) reset()", "func (p *Placer) clear()", false},
		{"a new exported function", "func New() *Placer", "func Other() {}\n\nfunc New() *Placer", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(base, tc.old) {
				t.Fatalf("the case's text %q is not in the package", tc.old)
			}
			dir := module(t, base)
			before := hashOf(t, dir)
			writePackage(t, dir, strings.Replace(base, tc.old, tc.new, 1))
			after := hashOf(t, dir)
			if (before == after) != tc.sameForUse {
				t.Errorf("hash before %s, after %s: want them equal %t", before, after, tc.sameForUse)
			}
		})
	}
}

// TestAPIHashStable: the same package hashes the same, compiled twice.
func TestAPIHashStable(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := module(t, base)
	first := hashOf(t, dir)
	// The build cache is the one the package was compiled into; a change
	// and its undoing compile it again.
	writePackage(t, dir, base+"\nfunc Extra() {}\n")
	hashOf(t, dir)
	writePackage(t, dir, base)
	if again := hashOf(t, dir); again != first {
		t.Errorf("the same package hashed %s, then %s", first, again)
	}
}

func TestAPIHashRefusesWhatDoesNotCompile(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := module(t, strings.Replace(base, "return len(p.Zones)", "return undefined + len(p.Zones)", 1))
	var out bytes.Buffer
	t.Chdir(dir)
	if err := run(&out, "", []string{"./p"}); err == nil {
		t.Fatalf("a package that does not compile hashed: %s", out.String())
	}
}

func module(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	writePackage(t, dir, src)
	return dir
}

func writePackage(t *testing.T, dir, src string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "p", "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func hashOf(t *testing.T, dir string) string {
	t.Helper()
	t.Chdir(dir)
	var out bytes.Buffer
	if err := run(&out, "", []string{"./p"}); err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(out.String())
	if len(f) != 2 || f[0] != "example.com/m/p" {
		t.Fatalf("want one line for example.com/m/p, got %q", out.String())
	}
	return f[1]
}
