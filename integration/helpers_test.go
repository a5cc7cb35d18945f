package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var root = func() string {
	wd, _ := os.Getwd()
	return filepath.Dir(wd)
}()

// daemon is one flavour started by hack/daemon.sh for the test.
type daemon struct {
	t      *testing.T
	sock   string
	client *http.Client
}

func startDaemon(t *testing.T, flavour string) *daemon {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("integration tests need root (test hosts are network namespaces)")
	}
	out, err := exec.Command(filepath.Join(root, "hack", "daemon.sh"), "up", flavour).Output()
	if err != nil {
		t.Fatalf("hack/daemon.sh up %s: %v: %s", flavour, err, stderrOf(err))
	}
	t.Cleanup(func() {
		if out, err := exec.Command(filepath.Join(root, "hack", "daemon.sh"), "down", flavour).CombinedOutput(); err != nil {
			t.Errorf("hack/daemon.sh down %s: %v: %s", flavour, err, out)
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
