// Command typecheck type-checks Go packages and everything they import, the
// standard library included, from source with go/types, for the GOOS and
// GOARCH of its environment, as the compiler's front end does and without
// generating code. It is what patches.sh check uses to learn whether the
// series builds dockerd for another platform (Windows): compiling the
// daemon's dependencies for it takes minutes on a cold cache, type-checking
// them a fraction of that.
//
// usage (in the module's directory):
//
//	[GOOS=windows] typecheck [-tags list] package...
//
// It prints each error as "import-path: position: message" and exits 1
// when there is one; a package using cgo is an error (the check is for
// platforms built without it).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// maxErrors bounds the errors reported per package.
const maxErrors = 10

type listed struct {
	ImportPath string
	Dir        string
	Standard   bool
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
	ImportMap  map[string]string
	Module     *struct{ GoVersion string }
	Error      *struct{ Err string }
}

func main() {
	tags := flag.String("tags", "", "build tags, as go build -tags takes them")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: typecheck [-tags list] package...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	n, err := run(os.Stdout, *tags, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "typecheck:", err)
		os.Exit(2)
	}
	if n > 0 {
		os.Exit(1)
	}
}

// run type-checks the packages and their dependencies, writes the errors
// to w and returns how many packages have them.
func run(w io.Writer, tags string, patterns []string) (int, error) {
	pkgs, err := list(tags, patterns)
	if err != nil {
		return 0, err
	}
	goarch := os.Getenv("GOARCH")
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	c := &checker{
		fset:  token.NewFileSet(),
		sizes: types.SizesFor("gc", goarch),
		pkgs:  map[string]*result{},
	}
	for _, p := range pkgs {
		c.pkgs[p.ImportPath] = &result{listed: p, done: make(chan struct{})}
	}
	// go list -deps lists a package after those it imports; each is
	// checked once those are, on as many at once as there are CPUs.
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, p := range pkgs {
		r := c.pkgs[p.ImportPath]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(r.done)
			for _, imp := range r.Imports {
				if d, ok := c.pkgs[imp]; ok {
					<-d.done
				}
			}
			sem <- struct{}{}
			defer func() { <-sem }()
			c.check(r)
		}()
	}
	wg.Wait()
	failed := 0
	for _, p := range pkgs {
		r := c.pkgs[p.ImportPath]
		if len(r.errs) == 0 {
			continue
		}
		failed++
		for _, e := range r.errs {
			fmt.Fprintf(w, "%s: %s\n", p.ImportPath, e)
		}
	}
	return failed, nil
}

func list(tags string, patterns []string) ([]*listed, error) {
	args := []string{"list", "-e", "-deps", "-json=ImportPath,Dir,Standard,GoFiles,CgoFiles,Imports,ImportMap,Module,Error"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []*listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(listed)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

type result struct {
	*listed
	done chan struct{}
	pkg  *types.Package
	errs []string
	// broken: a package it imports has errors; it is not checked, and
	// not reported (the package with the errors is).
	broken bool
}

type checker struct {
	fset  *token.FileSet
	sizes types.Sizes
	pkgs  map[string]*result
}

func (c *checker) check(r *result) {
	if r.ImportPath == "unsafe" {
		r.pkg = types.Unsafe
		return
	}
	if r.Error != nil {
		r.errs = append(r.errs, r.Error.Err)
		return
	}
	for _, imp := range r.Imports {
		if d, ok := c.pkgs[imp]; ok && (len(d.errs) > 0 || d.broken) {
			r.broken = true
			return
		}
	}
	if len(r.CgoFiles) > 0 {
		r.errs = append(r.errs, "uses cgo, which typecheck does not check")
		return
	}
	var files []*ast.File
	for _, name := range r.GoFiles {
		f, err := parser.ParseFile(c.fset, filepath.Join(r.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			r.errs = append(r.errs, err.Error())
			return
		}
		files = append(files, f)
	}
	conf := types.Config{
		Importer: importer(func(path string) (*types.Package, error) {
			if mapped, ok := r.ImportMap[path]; ok {
				path = mapped
			}
			d, ok := c.pkgs[path]
			if !ok || d.pkg == nil {
				return nil, fmt.Errorf("%s is not checked", path)
			}
			return d.pkg, nil
		}),
		Sizes: c.sizes,
		Error: func(err error) {
			if len(r.errs) < maxErrors {
				r.errs = append(r.errs, err.Error())
			}
		},
	}
	if r.Module != nil && r.Module.GoVersion != "" {
		conf.GoVersion = "go" + r.Module.GoVersion
	}
	// The standard library's packages may use what the toolchain's
	// own version allows.
	if r.Standard {
		conf.GoVersion = ""
		tags := build.Default.ReleaseTags
		if len(tags) > 0 {
			conf.GoVersion = tags[len(tags)-1]
		}
	}
	pkg, _ := conf.Check(r.ImportPath, c.fset, files, nil)
	r.pkg = pkg
	sort.Strings(r.errs)
	r.errs = dedupe(r.errs)
}

type importer func(path string) (*types.Package, error)

func (f importer) Import(path string) (*types.Package, error) { return f(path) }

func dedupe(s []string) []string {
	out := s[:0]
	for i, e := range s {
		if i == 0 || e != s[i-1] {
			out = append(out, strings.TrimSpace(e))
		}
	}
	return out
}
