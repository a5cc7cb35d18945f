"""One module per suite kind: what a suite of that kind says (its keys and
tables, and their checks), what running it measures, and its report's own
sections. The core (suite, runner, results, report) asks the kind for
these through its Kind (below); a kind's module has:

  suite files  KEYS         the top-level keys it takes
               SWITCHES     those of KEYS any suite may have while they are off
               REPETITIONS  the default
               SCANS        (if true) a daemon option given as a list is a scan; without
                            it a list is refused
               Suite        suite.Suite with the kind's tables
               validate(v, d, s)  check the kind's keys of d, fill s (v: suite.Validator)
               refuse(v, d, kind) refuse the kind's keys in a suite of another kind
  running      run(r)       measure every cell into r.results (r: runner.Runner)
               prepare(r)   (if it has one) what it needs before the daemons start
               images(s)    (if it has one) the images it needs beyond busybox and memholder
  the report   cell_name(e)  a cell's name in tables and plots
               KEY_FIELDS    its fields that tell cells apart besides profile, image, scenario, container
               compared(e)   (if it has one) the field of the samples compared, their unit, lower is
                             better; else times_s (report.compared)
               summary_note(doc)  (if it has one) a paragraph above the summary table,
                             or None (neighbour: what its latency is of)
               sections(doc) its Markdown sections, after the summary
               plots(doc, outdir, plt)  the PNGs it writes (report.bar_plot, its own)
               after_samples(doc)  (if it has one) Markdown lines after every sample
               summary_table(doc), write(outdir, doc)  instead of the above, a report of
                             another shape (zns)
               failures(doc) (if it has one) the cells whose failures fail the run, instead
                             of report.failures' rule (zns: none)

A kind's module is named after it (zns-sweep: zns_sweep), except kind zns,
whose module is zns_replay (beside ab/zns.py, the study's geometry and
replayer it calls). Each module ends with its KIND, a Kind naming these (the optional ones
default to nothing: no preparation, no images, times compared, no note, no
sections, plots or lines, the core's summary, report and failure rule); the
registry below lists every kind's module, imported when first asked for
(they build on the core modules, which ask for them). A hook misspelt in a
KIND is an error when its module is imported, not a hook silently
ignored."""
from dataclasses import dataclass
from typing import Callable, Optional

NAMES = ("pull", "checkpoint", "overhead", "cpuquota", "zns", "neighbour", "zns-sweep")


def _nothing(*_):
    return None


def _empty(*_):
    return []


@dataclass(frozen=True)
class Kind:
    """A suite kind, as its module declares it (see the module's doc)."""
    name: str
    KEYS: tuple
    SWITCHES: tuple
    REPETITIONS: int
    Suite: type
    validate: Callable
    refuse: Callable
    run: Callable
    SCANS: bool = False
    KEY_FIELDS: tuple = ()
    prepare: Callable = _nothing
    images: Callable = _empty
    cell_name: Optional[Callable] = None
    compared: Optional[Callable] = None
    summary_note: Callable = _nothing
    sections: Callable = _empty
    plots: Callable = _empty
    after_samples: Callable = _empty
    summary_table: Optional[Callable] = None
    write: Optional[Callable] = None
    failures: Optional[Callable] = None

    def systems(self):
        """The systems its flavors may run on: those whose module lists
        this kind (ab.systems, KINDS), so that a system is added by its
        own module alone."""
        from .. import systems
        return tuple(n for n in systems.NAMES if self.name in systems.get(n).KINDS)


_REGISTRY = {}


def _registry():
    if not _REGISTRY:
        from . import checkpoint, cpuquota, neighbour, overhead, pull, zns_replay, zns_sweep
        for m in (pull, checkpoint, overhead, cpuquota, zns_replay, neighbour, zns_sweep):
            _REGISTRY[m.KIND.name] = m.KIND
        assert tuple(_REGISTRY) == NAMES, (tuple(_REGISTRY), NAMES)
    return _REGISTRY


def get(name):
    """The Kind of kind name."""
    return _registry()[name]


def every():
    """Every Kind, in NAMES' order."""
    return list(_registry().values())
