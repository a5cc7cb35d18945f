package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// While several checkpoints are being written at once, the checkpoint list
// shows only finished checkpoints: never a staging directory, never one
// whose images are incomplete. A shell cannot list fast enough to catch the
// window; this polls the API as fast as the daemon answers.
func TestCheckpointListShowsOnlyFinishedCheckpoints(t *testing.T) {
	d := startDaemon(t, "patched")
	d.mustDocker("load", "-q", "-i", filepath.Join(root, "build", "images", "memholder.tar"))

	const n = 3
	ids := make([]string, n)
	for i := range ids {
		ids[i] = d.mustDocker("run", "-d", "ab/memholder", "memholder", "-r", "200", "128")
	}
	for _, id := range ids {
		d.waitMemholder(id)
	}

	var (
		wg      sync.WaitGroup
		done    = make(chan struct{})
		mu      sync.Mutex
		seen    = map[string]int{}
		polls   int
		mid     int // polls made while that container's checkpoint was being written
		pollErr []error
		badSeen []string
	)
	// Pollers: list every container's checkpoints, and check each listed
	// checkpoint is whole at that moment.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, id := range ids {
				cps := filepath.Join("/var/lib/moby-ab/patched/data/containers", id, "checkpoints")
				// A staging directory before and after the call: the
				// list was taken while a checkpoint was being written.
				before, _ := filepath.Glob(filepath.Join(cps, ".staging-*"))
				var list []struct{ Name string }
				err := d.getJSON("/containers/"+id+"/checkpoints", &list)
				after, _ := filepath.Glob(filepath.Join(cps, ".staging-*"))
				mu.Lock()
				if err != nil {
					pollErr = append(pollErr, err)
					mu.Unlock()
					continue
				}
				polls++
				if len(before) > 0 && len(after) > 0 {
					mid++
				}
				for _, c := range list {
					seen[c.Name]++
					dir := filepath.Join("/var/lib/moby-ab/patched/data/containers", id, "checkpoints", c.Name)
					if strings.HasPrefix(c.Name, ".") || !fileExists(filepath.Join(dir, "inventory.img")) {
						badSeen = append(badSeen, id[:12]+"/"+c.Name)
					}
				}
				mu.Unlock()
			}
		}
	}()

	errs := make(chan error, n*2)
	var cps sync.WaitGroup
	for round := 0; round < 2; round++ {
		for _, id := range ids {
			cps.Add(1)
			go func(id string, round int) {
				defer cps.Done()
				if out, err := d.docker("checkpoint", "create", "--leave-running", id, fmt.Sprintf("cp%d", round)); err != nil {
					errs <- fmt.Errorf("checkpoint %s cp%d: %v: %s", id[:12], round, err, out)
				}
			}(id, round)
		}
		cps.Wait()
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(pollErr) > 0 {
		t.Fatalf("%d of %d list calls failed, the first: %v", len(pollErr), polls+len(pollErr), pollErr[0])
	}
	if len(badSeen) > 0 {
		t.Fatalf("listed before they were whole: %v", badSeen)
	}
	if seen["cp0"] == 0 || seen["cp1"] == 0 {
		t.Fatalf("finished checkpoints were never listed (%d polls): %v", polls, seen)
	}
	// The test shows something only if lists were taken while images were
	// being written.
	if mid == 0 {
		t.Fatalf("no list call landed while a checkpoint was being written (%d polls)", polls)
	}
	t.Logf("%d list calls during %d concurrent checkpoints, %d of them while one was being written; listed: %v", polls, 2*n, mid, seen)

	// Every container still runs with its memory intact.
	for _, id := range ids {
		if out := d.mustDocker("inspect", "-f", "{{.State.Running}}", id); out != "true" {
			t.Errorf("%s not running after --leave-running checkpoints", id[:12])
		}
		if out, _ := d.docker("logs", id); strings.Contains(out, "CORRUPT") {
			t.Errorf("%s: memory corrupted: %s", id[:12], out)
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
