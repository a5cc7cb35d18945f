// Command apihash prints, for each Go package named, a hash of everything a
// package importing it is compiled against: every declaration of the
// package (exported or not, as the compiler's export data holds them), the
// full structure of each named type of the package reachable from them
// (fields, tags, embedded types, methods) and the value of each constant.
// Function bodies are not in it.
//
// patches.sh check uses it to learn whether a patch changed what the
// packages importing the ones it touched are compiled against: when the hash
// of every package the patch touched is the one it had before the patch,
// those packages cannot compile differently, and compiling the touched
// packages suffices.
//
// usage (in the module's directory):
//
//	apihash [-tags list] package...
//
// It compiles the packages (go list -export) and prints one line per
// package, "import-path hash". A package that does not compile is an error.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

type listed struct {
	ImportPath string
	Export     string
	DepOnly    bool
	GoFiles    []string
	Error      *struct{ Err string }
}

func main() {
	tags := flag.String("tags", "", "build tags, as go build -tags takes them")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: apihash [-tags list] package...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(os.Stdout, *tags, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "apihash:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, tags string, patterns []string) error {
	args := []string{"list", "-e", "-trimpath", "-export", "-deps", "-json=ImportPath,Export,DepOnly,GoFiles,Error"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	exports := map[string]string{}
	var targets []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("go list output: %w", err)
		}
		if p.Error != nil {
			return fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly && len(p.GoFiles) > 0 {
			targets = append(targets, p.ImportPath)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	}).(types.ImporterFrom)
	sort.Strings(targets)
	for _, path := range targets {
		pkg, err := imp.ImportFrom(path, "", 0)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		fmt.Fprintf(w, "%s %x\n", path, hashPackage(pkg))
	}
	return nil
}

// hashPackage hashes describe's text of the package.
func hashPackage(pkg *types.Package) []byte {
	h := sha256.New()
	bw := bufio.NewWriter(h)
	describe(bw, pkg)
	bw.Flush()
	return h.Sum(nil)
}

// describe writes, in a stable order, what importers of pkg are compiled
// against: its name, every object of its scope, and each of its named types
// reachable from them with their structure and methods.
func describe(w io.Writer, pkg *types.Package) {
	qual := func(p *types.Package) string { return p.Path() }
	fmt.Fprintf(w, "package %s %s\n", pkg.Name(), pkg.Path())
	var named []*types.Named
	seen := map[*types.Named]bool{}
	var visit func(t types.Type)
	visit = func(t types.Type) {
		switch t := t.(type) {
		case *types.Named:
			if t.Obj().Pkg() != pkg || seen[t.Origin()] {
				for i := 0; i < t.TypeArgs().Len(); i++ {
					visit(t.TypeArgs().At(i))
				}
				return
			}
			o := t.Origin()
			seen[o] = true
			named = append(named, o)
			visit(o.Underlying())
			for i := 0; i < o.NumMethods(); i++ {
				visit(o.Method(i).Type())
			}
			for i := 0; i < t.TypeArgs().Len(); i++ {
				visit(t.TypeArgs().At(i))
			}
		case *types.Alias:
			visit(types.Unalias(t))
		case *types.Pointer:
			visit(t.Elem())
		case *types.Slice:
			visit(t.Elem())
		case *types.Array:
			visit(t.Elem())
		case *types.Map:
			visit(t.Key())
			visit(t.Elem())
		case *types.Chan:
			visit(t.Elem())
		case *types.Signature:
			visit(t.Params())
			visit(t.Results())
			if r := t.Recv(); r != nil {
				visit(r.Type())
			}
		case *types.Tuple:
			for i := 0; i < t.Len(); i++ {
				visit(t.At(i).Type())
			}
		case *types.Struct:
			for i := 0; i < t.NumFields(); i++ {
				visit(t.Field(i).Type())
			}
		case *types.Interface:
			for i := 0; i < t.NumEmbeddeds(); i++ {
				visit(t.EmbeddedType(i))
			}
			for i := 0; i < t.NumExplicitMethods(); i++ {
				visit(t.ExplicitMethod(i).Type())
			}
		case *types.TypeParam:
			visit(t.Constraint())
		case *types.Union:
			for i := 0; i < t.Len(); i++ {
				visit(t.Term(i).Type())
			}
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		fmt.Fprintf(w, "object %s\n", types.ObjectString(obj, qual))
		if c, ok := obj.(*types.Const); ok {
			fmt.Fprintf(w, "  value %s\n", c.Val().ExactString())
		}
		visit(obj.Type())
	}
	// The named types in the order they were reached, which the sorted
	// scope makes stable; their names sorted again for the record.
	lines := make([]string, 0, len(named))
	for _, t := range named {
		var b strings.Builder
		fmt.Fprintf(&b, "type %s", types.TypeString(t, qual))
		if tp := t.TypeParams(); tp.Len() > 0 {
			for i := 0; i < tp.Len(); i++ {
				fmt.Fprintf(&b, " [%s %s]", tp.At(i).Obj().Name(), types.TypeString(tp.At(i).Constraint(), qual))
			}
		}
		fmt.Fprintf(&b, " = %s\n", typeWithTags(t.Underlying(), qual))
		methods := make([]string, 0, t.NumMethods())
		for i := 0; i < t.NumMethods(); i++ {
			m := t.Method(i)
			recv := m.Type().(*types.Signature).Recv().Type()
			methods = append(methods, fmt.Sprintf("  method (%s) %s %s\n", types.TypeString(recv, qual), m.Name(), types.TypeString(m.Type(), qual)))
		}
		sort.Strings(methods)
		b.WriteString(strings.Join(methods, ""))
		lines = append(lines, b.String())
	}
	sort.Strings(lines)
	for _, l := range lines {
		io.WriteString(w, l)
	}
}

// typeWithTags is types.TypeString, with each struct field's embedding and
// tag spelled out (TypeString already writes tags; this makes the record
// independent of how it quotes them).
func typeWithTags(t types.Type, qual types.Qualifier) string {
	s, ok := t.(*types.Struct)
	if !ok {
		return types.TypeString(t, qual)
	}
	var b strings.Builder
	b.WriteString("struct{")
	for i := 0; i < s.NumFields(); i++ {
		f := s.Field(i)
		fmt.Fprintf(&b, "%s %s embedded=%t tag=%q; ", f.Name(), types.TypeString(f.Type(), qual), f.Embedded(), s.Tag(i))
	}
	b.WriteString("}")
	return b.String()
}
