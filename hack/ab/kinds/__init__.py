"""One module per suite kind: what a suite of that kind says (its keys and
tables, and their checks), what running it measures, and its report's own
sections. The core (suite, runner, results, report) asks the kind's module
for these by name; a kind's module has:

  suite files  KEYS         the top-level keys it takes
               SWITCHES     those of KEYS any suite may have while they are off
               REPETITIONS  the default
               SYSTEMS      the systems its flavours may run on (ab.systems): dockerd, and
                            the peers it can compare the patched daemon with
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

Modules are imported when first asked for: they build on the core modules,
which ask for them."""
import importlib

NAMES = ("pull", "checkpoint", "overhead", "cpuquota", "zns", "neighbour", "zns-sweep")


def get(name):
    """The module of kind name (zns-sweep: zns_sweep)."""
    return importlib.import_module("." + name.replace("-", "_"), __name__)


def every():
    """Every kind's module, in NAMES' order."""
    return [get(n) for n in NAMES]
