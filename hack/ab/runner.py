"""Runs a validated suite: prepares registry, links, daemons and images, then
has the kind's module (hack/ab/kinds/) measure every cell, the flavors
taking turns in an order drawn per repetition, each measurement cold.
Writes results.json after every sample, so an interrupted run keeps what
it measured."""
import os
import shutil
import signal
import sys
import tempfile

from . import hosts, kinds, measure, systems
from .results import Results, now


class Runner:
    """What a kind's run(r) has: the suite (s), the running test hosts by
    flavor (daemons: a dockerd's hosts.Daemon, or another system's host,
    see ab.systems), the results, a scratch directory (tmp) and the results
    directory (out); orders: the flavors' order in each repetition
    (measure.orders), drawn before anything runs from the suite's
    order_seed or, without one, from the start time, and kept in
    results.json."""

    def __init__(self, suite, outdir):
        self.s = suite
        self.out = outdir
        self.kind = kinds.get(suite.kind)
        started = now()
        self.seed, self.orders = None, []
        if suite.needs_hosts:
            self.seed = suite.order_seed if suite.order_seed is not None else measure.seed_of(started)
            self.orders = measure.orders(suite.flavors, suite.repetitions, self.seed)
        self.results = Results(suite, outdir, started=started, order_seed=self.seed, orders=self.orders)
        self.daemons = {}
        self.tmp = tempfile.mkdtemp(prefix="ab-run-")

    def run(self):
        interrupted = False

        def on_signal(sig, frame):
            raise KeyboardInterrupt
        signal.signal(signal.SIGTERM, on_signal)
        try:
            self.prepare()
            self.kind.run(self)
        except KeyboardInterrupt:
            interrupted = True
            sys.stderr.write("\ninterrupted: tearing down; what was measured is kept\n")
        finally:
            self.teardown()
            self.results.doc["finished"] = now()
            self.results.doc["interrupted"] = interrupted
            self.results.save()
        return not interrupted

    def prepare(self):
        """The images, the registry and a daemon per flavor; first what the
        kind needs (kinds.<kind>.prepare), and the images it needs beyond
        busybox and memholder (kinds.<kind>.images)."""
        sys.stderr.write(f"==> suite {self.s.name} ({self.s.kind}), results in {self.out}\n")
        if not self.s.needs_hosts:
            return
        hosts.build_images("busybox", "memholder")
        self.kind.prepare(self)
        extra = self.kind.images(self.s)
        if extra:
            hosts.build_images(*extra)
        hosts.registry_up()
        for f in self.s.flavors:
            fl = self.s.flavors[f]
            system = systems.get(fl.system)
            self.daemons[f] = system.start(f, fl, ["busybox", "memholder"] + list(extra))
            self.results.doc["daemons"][f] = system.record(self.daemons[f], fl)
        self.results.save()

    def flavor_order(self, rep):
        """The running flavors in repetition rep's order (orders); the
        results give each sample of a flavor its place in it."""
        return [f for f in self.orders[rep] if f in self.daemons]

    def interleave(self, variants, rep):
        """Repetition rep's variants (tuples, the flavor first: a scan's
        settings, the patched daemon's arms) in the order they run, the
        flavors taking turns (measure.arrange); a sample's place in it
        is its position."""
        return measure.arrange(variants, self.flavor_order(rep), rep, self.s.repetitions, self.seed)

    def teardown(self):
        for f in list(self.daemons):
            # down takes the host's emulated links down too (hack/hosts/daemon.sh,
            # containerd-host.sh, podman-host.sh); charliecloud has none
            self.daemons[f].down(keep=self.out)
        if self.s.needs_hosts:
            hosts.registry_down()
        if os.environ.get("AB_KEEP_TMP"):
            print(f"scratch kept (AB_KEEP_TMP): {self.tmp}", file=sys.stderr)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
