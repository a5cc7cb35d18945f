package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// files is a module whose package p calls a function only its Linux file
// declares, from a file every platform builds, the mistake the check is
// for; package q imports p and package r imports q.
var files = map[string]string{
	"go.mod":       "module example.com/m\n\ngo 1.22\n",
	"p/p.go":       "package p\n\nfunc Mounts() int { return mounts() }\n",
	"p/p_linux.go": "package p\n\nfunc mounts() int { return 1 }\n",
	"q/q.go":       "package q\n\nimport \"example.com/m/p\"\n\nfunc Q() int { return p.Mounts() }\n",
	"r/r.go":       "package r\n\nimport \"example.com/m/q\"\n\nfunc R() int { return q.Q() }\n",
}

func TestTypecheck(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, tc := range []struct {
		name   string
		goos   string
		extra  map[string]string
		failed int
		want   []string // in the output, in this order
	}{
		{name: "the platform the functions are declared for", goos: "linux"},
		{
			name: "another platform: the package, not its importers", goos: "windows", failed: 1,
			want: []string{"example.com/m/p: ", "p.go:3:28: undefined: mounts"},
		},
		{
			name: "another platform with its own file", goos: "windows",
			extra: map[string]string{"p/p_windows.go": "package p\n\nfunc mounts() int { return 0 }\n"},
		},
		{
			name: "a type error in the standard library's use", goos: "windows", failed: 1,
			extra: map[string]string{"p/p_windows.go": "package p\n\nimport \"os\"\n\nfunc mounts() int { return os.Getpid() + \"\" }\n"},
			want:  []string{"example.com/m/p: ", "mismatched types"},
		},
		{
			name: "an unused import", goos: "windows", failed: 1,
			extra: map[string]string{"p/p_windows.go": "package p\n\nimport \"os\"\n\nfunc mounts() int { return 0 }\n"},
			want:  []string{"example.com/m/p: ", `"os" imported and not used`},
		},
		{
			name: "a file that does not parse", goos: "windows", failed: 1,
			extra: map[string]string{"p/p_windows.go": "package p\n\nfunc mounts() int { return 0\n"},
			want:  []string{"example.com/m/p: ", "p_windows.go"},
		},
		{
			name: "a language feature newer than the module's go line", goos: "linux", failed: 1,
			// go 1.22 allows range over an int: the module says 1.21.
			extra: map[string]string{
				"go.mod":       "module example.com/m\n\ngo 1.21\n",
				"p/p_linux.go": "package p\n\nfunc mounts() (n int) {\n\tfor range 3 {\n\t\tn++\n\t}\n\treturn n\n}\n",
			},
			want: []string{"example.com/m/p: ", "requires go1.22"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, src := range files {
				write(t, dir, name, src)
			}
			for name, src := range tc.extra {
				write(t, dir, name, src)
			}
			t.Chdir(dir)
			t.Setenv("GOOS", tc.goos)
			t.Setenv("GOARCH", "amd64")
			t.Setenv("CGO_ENABLED", "0")
			var out bytes.Buffer
			failed, err := run(&out, "", []string{"./r"})
			if err != nil {
				t.Fatal(err)
			}
			if failed != tc.failed {
				t.Errorf("%d package(s) failed, want %d; output:\n%s", failed, tc.failed, out.String())
			}
			rest := out.String()
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order); output:\n%s", w, out.String())
				}
				rest = rest[i+len(w):]
			}
			if tc.failed == 0 && out.Len() > 0 {
				t.Errorf("errors where none were expected:\n%s", out.String())
			}
			for _, dependent := range []string{"example.com/m/q", "example.com/m/r"} {
				if strings.Contains(out.String(), dependent+":") {
					t.Errorf("a package whose import failed is reported itself:\n%s", out.String())
				}
			}
		})
	}
}

func TestTypecheckRefusesCgo(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	for name, src := range files {
		write(t, dir, name, src)
	}
	write(t, dir, "p/p_cgo.go", "package p\n\n// int one(void) { return 1; }\nimport \"C\"\n\nfunc One() int { return int(C.one()) }\n")
	t.Chdir(dir)
	t.Setenv("GOOS", "linux")
	t.Setenv("CGO_ENABLED", "1")
	var out bytes.Buffer
	failed, err := run(&out, "", []string{"./p"})
	if err != nil {
		t.Fatal(err)
	}
	if failed == 0 || !strings.Contains(out.String(), "example.com/m/p: uses cgo") {
		t.Errorf("a cgo package was not refused (%d failed):\n%s", failed, out.String())
	}
}

func write(t *testing.T, dir, name, src string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}
