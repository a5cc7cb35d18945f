package integration

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Four creates of one checkpoint name sent at once to one running container:
// exactly one is taken, the others are refused at once with 409 Conflict
// ("is being created" or "already exists"). What is left is that one
// checkpoint, listed once, whole, with no staging directory beside it, and
// the container runs on; the checkpoint restores with the memory intact.
func TestCheckpointSameNameConcurrent(t *testing.T) {
	d := startDaemon(t, "patched")
	d.mustDocker("load", "-q", "-i", filepath.Join(root, "build", "images", "memholder.tar"))

	const (
		rounds = 3
		n      = 4
		cp     = "same"
	)
	for round := range rounds {
		t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) {
			d := d.forTest(t)
			id := d.runMemholder(fmt.Sprintf("same-name-%d", round), 64)
			before := d.lastCount(id)

			type result struct {
				code int
				body string
				err  error
			}
			results := make([]result, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					code, body, err := d.request(http.MethodPost, "/containers/"+id+"/checkpoints",
						map[string]any{"CheckpointID": cp, "Exit": false})
					results[i] = result{code, body, err}
				}()
			}
			began := time.Now()
			close(start)
			wg.Wait()
			t.Logf("%d creates of %q at once took %v", n, cp, time.Since(began).Round(time.Millisecond))

			ok := 0
			for i, r := range results {
				t.Logf("create %d: %d %s", i, r.code, r.body)
				switch {
				case r.err != nil:
					t.Errorf("create %d: %v", i, r.err)
				case r.code >= 200 && r.code < 300:
					ok++
				case r.code != http.StatusConflict:
					t.Errorf("create %d: status %d, want 409 Conflict: %s", i, r.code, r.body)
				}
			}
			if ok != 1 {
				t.Errorf("%d of %d concurrent creates of %q succeeded, want exactly 1", ok, n, cp)
			}

			if out := d.mustDocker("inspect", "-f", "{{.State.Status}}", id); out != "running" {
				t.Errorf("container is %s after --leave-running checkpoints, want running", out)
			}
			var list []struct{ Name string }
			if err := d.getJSON("/containers/"+id+"/checkpoints", &list); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range list {
				names = append(names, c.Name)
			}
			if !slices.Equal(names, []string{cp}) {
				t.Errorf("checkpoints listed: %q, want [%q]", names, cp)
			}
			cpRoot := filepath.Join(patchedDataRoot, "containers", id, "checkpoints")
			entries, err := os.ReadDir(cpRoot)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".") {
					t.Errorf("left in %s: %s", cpRoot, e.Name())
				}
			}
			if !slices.Contains(names, cp) {
				t.Fatalf("no checkpoint %q to restore", cp)
			}
			if !fileExists(filepath.Join(cpRoot, cp, "inventory.img")) {
				t.Errorf("checkpoint %q is listed but has no inventory.img", cp)
			}

			// A --leave-running checkpoint restores once the container is stopped.
			d.mustDocker("stop", id)
			d.restoreCountsOn(id, cp, before)
		})
	}
}

// Checkpoint IDs that name anything but a directory inside the container's
// checkpoint directory are refused with 400 by create and delete, and a
// checkpoint directory that is relative or not clean is refused with 400 by
// create, list, delete and start. Nothing outside the container's checkpoint
// directory is created or removed.
//
// For delete the ID is a path segment: the API router (gorilla/mux) answers
// some IDs itself before the daemon sees them: a path with a "." or ".."
// segment (also percent-encoded) gets 301 Moved Permanently to the cleaned
// path, and an encoded "/" makes an extra segment that no route matches, 404.
// The test accepts those statuses there, and 400 everywhere.
func TestCheckpointIDTraversal(t *testing.T) {
	d := startDaemon(t, "patched")
	d.mustDocker("load", "-q", "-i", filepath.Join(root, "build", "images", "memholder.tar"))
	id := d.runMemholder("traversal", 16)

	ctrDir := filepath.Join(patchedDataRoot, "containers", id)
	cpRoot := filepath.Join(ctrDir, "checkpoints")
	// Sentinels: what a traversal from the checkpoint directory would reach
	// ("../sentinel", "../../../sentinel").
	sentinels := []string{filepath.Join(ctrDir, "sentinel"), filepath.Join(patchedDataRoot, "sentinel")}
	for _, s := range sentinels {
		if err := os.MkdirAll(s, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(s) })
		if err := os.WriteFile(filepath.Join(s, "keep"), []byte("sentinel\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A checkpoint that must survive every bad request.
	if code, body, err := d.request(http.MethodPost, "/containers/"+id+"/checkpoints",
		map[string]any{"CheckpointID": "keep", "Exit": false}); err != nil || code != http.StatusCreated {
		t.Fatalf("create keep: %d %s %v", code, body, err)
	}
	outside := snapshotOutside(t, ctrDir)

	t.Run("create", func(t *testing.T) {
		for _, cpID := range []string{
			"..", ".", "../sentinel", "../../../sentinel", "keep/../../sentinel", "a/b",
			"x.", "...", ".staging-keep", "", "/tmp/abs", "-x",
		} {
			code, body, err := d.request(http.MethodPost, "/containers/"+id+"/checkpoints",
				map[string]any{"CheckpointID": cpID, "Exit": false})
			if err != nil {
				t.Fatal(err)
			}
			if code != http.StatusBadRequest {
				t.Errorf("create %q: %d %s, want 400", cpID, code, body)
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		for _, c := range []struct {
			seg    string // as sent, percent-encoded
			router int    // the status the router may answer itself, or 0
		}{
			{"x.", 0},
			{"...", 0},
			{".staging-keep", 0},
			{"-x", 0},
			{"..", http.StatusMovedPermanently},
			{"%2e%2e", http.StatusMovedPermanently},
			{"%2E%2E", http.StatusMovedPermanently},
			{".", http.StatusMovedPermanently},
			{"%2e", http.StatusMovedPermanently},
			{"..%2fsentinel", http.StatusMovedPermanently},
			{"%2e%2e%2fsentinel", http.StatusMovedPermanently},
			{"..%2f..%2f..%2fsentinel", http.StatusMovedPermanently},
			{"keep%2f..%2f..%2fsentinel", http.StatusMovedPermanently},
			{"keep%2f..", http.StatusMovedPermanently},
			{"a%2fb", http.StatusNotFound},
		} {
			code, body, err := d.request(http.MethodDelete, "/containers/"+id+"/checkpoints/"+c.seg, nil)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case code == http.StatusBadRequest:
			case c.router != 0 && code == c.router:
				t.Logf("delete %q: %d, answered by the router", c.seg, code)
			default:
				want := "400"
				if c.router != 0 {
					want = fmt.Sprintf("400 or the router's %d", c.router)
				}
				t.Errorf("delete %q: %d %s, want %s", c.seg, code, body, want)
			}
		}
	})

	t.Run("checkpoint-dir", func(t *testing.T) {
		// A relative directory would be resolved against dockerd's working
		// directory: a name of its own there, removed whatever happens.
		cwd := daemonCwd(t, "patched")
		relTop := fmt.Sprintf("ab-relative-%d", time.Now().UnixNano())
		t.Cleanup(func() { os.RemoveAll(filepath.Join(cwd, relTop)) })
		tmp := t.TempDir()
		stopped := d.mustDocker("create", "ab/memholder", "memholder", "16")
		t.Cleanup(func() { d.docker("rm", "-f", stopped) })

		for _, dir := range []string{relTop + "/x", "./" + relTop, tmp + "/a/../b", tmp + "/./c"} {
			q := url.QueryEscape(dir)
			code, body, err := d.request(http.MethodPost, "/containers/"+id+"/checkpoints",
				map[string]any{"CheckpointID": "cpdir", "CheckpointDir": dir, "Exit": false})
			if err != nil {
				t.Fatal(err)
			}
			if code != http.StatusBadRequest {
				t.Errorf("create in %q: %d %s, want 400", dir, code, body)
			}
			if code, body, err = d.request(http.MethodGet, "/containers/"+id+"/checkpoints?dir="+q, nil); err != nil {
				t.Fatal(err)
			}
			if code != http.StatusBadRequest {
				t.Errorf("list %q: %d %s, want 400", dir, code, body)
			}
			if code, body, err = d.request(http.MethodDelete, "/containers/"+id+"/checkpoints/keep?dir="+q, nil); err != nil {
				t.Fatal(err)
			}
			if code != http.StatusBadRequest {
				t.Errorf("delete keep in %q: %d %s, want 400", dir, code, body)
			}
			if code, body, err = d.request(http.MethodPost, "/containers/"+stopped+"/start?checkpoint=keep&checkpoint-dir="+q, nil); err != nil {
				t.Fatal(err)
			}
			if code != http.StatusBadRequest {
				t.Errorf("start from keep in %q: %d %s, want 400", dir, code, body)
			}
		}
		for _, p := range []string{filepath.Join(cwd, relTop), filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), filepath.Join(tmp, "c")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s was created", p)
			}
		}
	})

	for _, s := range sentinels {
		if !fileExists(filepath.Join(s, "keep")) {
			t.Errorf("sentinel %s was removed", s)
		}
	}
	after := snapshotOutside(t, ctrDir)
	for _, p := range sortedKeys(after) {
		if !outside[p] {
			t.Errorf("appeared outside the checkpoint directory: %s", p)
		}
	}
	for _, p := range sortedKeys(outside) {
		if !after[p] {
			t.Errorf("gone from outside the checkpoint directory: %s", p)
		}
	}
	entries, err := os.ReadDir(cpRoot)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"keep"}) {
		t.Errorf("in %s: %q, want only keep", cpRoot, left)
	}
	if !fileExists(filepath.Join(cpRoot, "keep", "inventory.img")) {
		t.Errorf("checkpoint keep lost its images")
	}
	// A good ID is still served.
	if code, body, err := d.request(http.MethodDelete, "/containers/"+id+"/checkpoints/keep", nil); err != nil || code != http.StatusNoContent {
		t.Errorf("delete keep: %d %s %v", code, body, err)
	}
}

// snapshotOutside names what is around a container's checkpoint directory:
// the container's directory without "checkpoints", the data-root's and its
// parent's entries and the other containers' directories. Files written by
// an atomic replace (".tmp-*") are left out.
func snapshotOutside(t *testing.T, ctrDir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(ctrDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == filepath.Join(ctrDir, "checkpoints") {
			return filepath.SkipDir
		}
		if !strings.HasPrefix(e.Name(), ".tmp-") {
			out[p] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Dir(patchedDataRoot), patchedDataRoot, filepath.Dir(ctrDir)} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".tmp-") {
				out[filepath.Join(dir, e.Name())] = true
			}
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
