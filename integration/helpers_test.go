package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var root = func() string {
	wd, _ := os.Getwd()
	return filepath.Dir(wd)
}()

// daemon is one flavor started by hack/hosts/daemon.sh for the test.
type daemon struct {
	t      *testing.T
	sock   string
	client *http.Client
}

func startDaemon(t *testing.T, flavor string) *daemon {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("integration tests need root (test hosts are network namespaces)")
	}
	out, err := exec.Command(filepath.Join(root, "hack", "hosts", "daemon.sh"), "up", flavor).Output()
	if err != nil {
		t.Fatalf("hack/hosts/daemon.sh up %s: %v: %s", flavor, err, stderrOf(err))
	}
	t.Cleanup(func() {
		if out, err := exec.Command(filepath.Join(root, "hack", "hosts", "daemon.sh"), "down", flavor).CombinedOutput(); err != nil {
			t.Errorf("hack/hosts/daemon.sh down %s: %v: %s", flavor, err, out)
		}
	})
	sock := strings.TrimSpace(strings.SplitN(string(out), "unix://", 2)[1])
	d := &daemon{t: t, sock: sock, client: &http.Client{
		Timeout: 60 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", sock)
		}},
	}}
	return d
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// docker runs the CLI against this daemon.
func (d *daemon) docker(args ...string) (string, error) {
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+d.sock)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (d *daemon) mustDocker(args ...string) string {
	d.t.Helper()
	out, err := d.docker(args...)
	if err != nil {
		d.t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out
}

// getJSON calls the Engine API directly.
func (d *daemon) getJSON(path string, v any) error {
	resp, err := d.client.Get("http://docker" + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// patchedDataRoot is the patched test host's data-root (hack/hosts/daemon.sh).
const patchedDataRoot = "/var/lib/moby-ab/patched/data"

// forTest is the daemon with its failures reported to t (a subtest).
func (d *daemon) forTest(t *testing.T) *daemon {
	c := *d
	c.t = t
	return &c
}

// request calls the Engine API directly and returns the status code and the
// body, whatever the status. path goes out as given, escapes included; a
// redirect is returned, not followed. body, if not nil, is sent as JSON.
func (d *daemon) request(method, path string, body any) (int, string, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, "", err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://docker"+path, rd)
	if err != nil {
		return 0, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c := *d.client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// runMemholder starts a memory holder of mib MiB reporting every 200 ms,
// removed when the test ends, and waits until it has verified its memory.
func (d *daemon) runMemholder(name string, mib int) string {
	d.t.Helper()
	id := d.mustDocker("run", "-d", "--name", name, "ab/memholder", "memholder", "-r", "200", strconv.Itoa(mib))
	d.t.Cleanup(func() { d.docker("rm", "-f", id) })
	d.waitMemholder(id)
	return id
}

func (d *daemon) waitMemholder(id string) {
	d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _ := d.docker("logs", "--tail", "1", id)
		if strings.Contains(out, "verified_passes=") {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("memory holder %s never got ready: %s", id[:12], out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var countRE = regexp.MustCompile(`(?m)^memholder .* count=(\d+) `)

// memholderCounts are the counters a memory holder's log lines report, in order.
func memholderCounts(logs string) []int {
	var out []int
	for _, m := range countRE.FindAllStringSubmatch(logs, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

// lastCount is the last counter a memory holder reported, or -1.
func (d *daemon) lastCount(id string) int {
	d.t.Helper()
	c := memholderCounts(d.mustDocker("logs", id))
	if len(c) == 0 {
		return -1
	}
	return c[len(c)-1]
}

// restoreCountsOn restores the stopped memory holder id from checkpoint cp
// and checks that it counts on from the checkpoint, which was taken after it
// had reported before, with its memory intact.
func (d *daemon) restoreCountsOn(id, cp string, before int) {
	d.t.Helper()
	logs := d.mustDocker("logs", id)
	n := len(memholderCounts(logs))
	if out, err := d.docker("start", "--checkpoint", cp, id); err != nil {
		d.t.Fatalf("docker start --checkpoint %s: %v: %s", cp, err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		logs = d.mustDocker("logs", id)
		if c := memholderCounts(logs); len(c) > n {
			if c[n] <= before {
				d.t.Errorf("restored from %s, the memory holder counts from %d, not on from %d", cp, c[n], before)
			}
			break
		}
		if time.Now().After(deadline) {
			st, _ := d.docker("inspect", "-f", "{{.State.Status}} exit={{.State.ExitCode}}", id)
			d.t.Errorf("restored from %s, the memory holder printed nothing in 20s (%s); its log ends:\n%s", cp, st, tail(logs, 5))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Contains(logs, "CORRUPT") {
		d.t.Errorf("restored from %s, the memory holder found its memory corrupted:\n%s", cp, tail(logs, 5))
	}
	if out := d.mustDocker("inspect", "-f", "{{.State.Running}}", id); out != "true" {
		d.t.Errorf("restored from %s, the container is not running", cp)
	}
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// daemonCwd is the working directory of the flavor's dockerd, where a
// relative path would land.
func daemonCwd(t *testing.T, flavor string) string {
	t.Helper()
	pid, err := os.ReadFile(filepath.Join("/run/moby-ab", flavor, "dockerd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	cwd, err := os.Readlink(filepath.Join("/proc", strings.TrimSpace(string(pid)), "cwd"))
	if err != nil {
		t.Fatal(err)
	}
	return cwd
}
