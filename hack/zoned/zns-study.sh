#!/usr/bin/env bash
# Every run docs/zns-study.md cites, regenerated in one command (its section
# 7), each into a directory of OUT, and each deterministic replay compared
# cell by cell with the committed results it must reproduce (ab.zns_agree):
#
#   hack/zoned/zns-study.sh OUT [--guest]
#
#   zns-geometry                   (3.12, 4-6 minutes on two cores)
#   zns-sweep                      (3.1-3.5 and 3.11, 5-9 minutes)
#   zns-capacity                   (3.9 and 3.11, 6-22 minutes)
#   zns-replay-recorded-deletes    (3.6 and 3.11, seconds)
#   zns-page                       (2.3, 3.1, 4: the numbers the page computes
#                                  itself, ab.zns_page, checked against the
#                                  page; a second)
#   zns-bound                      (3.10, about 6 minutes; with OR-Tools in .venv,
#                                  see the study's section 7; a solve under a
#                                  time limit may prove less on a slower
#                                  machine, so it is not compared)
#   zns-guest-trace                (3.8, --guest only: the daemon in the QEMU
#                                  guest, about 30 minutes; a sample of the
#                                  daemon's timing, not compared)
#
# Each directory gets the run's results.json, report.md and figures; OUT/summary
# says, per run, how long it took and whether it reproduced the committed one.
# Exits 1 when a replay does not reproduce its committed results (or the page
# does not quote its own numbers as computed), and 2 when a run fails. No
# daemon runs on this host; the replayer is built from the patched tree
# (hack/zoned/zns-replay.sh build).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

usage="usage: hack/zoned/zns-study.sh OUT [--guest]"
out=${1:?$usage}
shift
guest=
while [ $# -gt 0 ]; do
	case $1 in
	--guest) guest=1 ;;
	*) die "zns-study: unknown argument '$1' ($usage)" ;;
	esac
	shift
done
mkdir -p "$out"
[ -z "$(ls -A "$out")" ] || die "zns-study: $out is not empty"
out=$(cd "$out" && pwd)
PY=${PYTHON:-/usr/bin/python3}
M=$AB_ROOT/docs/measurements

# suite, and the committed run it reproduces
RUNS=(
	"zns-geometry 2026-12-03-0d099d4a55-zns-geometry"
	"zns-sweep 2026-12-02-99078330e1-zns-sweep"
	"zns-capacity 2026-12-02-99078330e1-zns-capacity"
	"zns-replay-recorded-deletes 2026-12-02-99078330e1-zns-replay-recorded-deletes"
)

"$AB_ROOT/hack/zoned/zns-replay.sh" build >/dev/null
: >"$out/summary"
status=0
note() { echo "$*" | tee -a "$out/summary"; }
# step NAME CMD...: CMD's output in OUT/NAME.log; on failure its tail, a note
# and status 2 (returns 1); on success the seconds it took in $took.
step() {
	local name=$1 t0
	shift
	t0=$(date +%s)
	if ! "$@" >"$out/$name.log" 2>&1; then
		tail -n 20 "$out/$name.log" >&2
		note "$name: the run failed ($out/$name.log)"
		status=2
		return 1
	fi
	took=$(($(date +%s) - t0))
}
export PYTHONPATH=$AB_ROOT/hack
for r in "${RUNS[@]}"; do
	read -r suite committed <<<"$r"
	[ -d "$M/$committed" ] || die "zns-study: docs/measurements/$committed is missing"
	log "zns-study: $suite (the committed run: $committed)"
	step "$suite" "$PY" -m ab run "$suite" --results "$out/$suite" || continue
	if agree=$("$PY" -m ab.zns_agree "$M/$committed" "$out/$suite" 2>&1); then
		note "$suite: ${took}s; reproduces $committed: ${agree#*: }"
	else
		note "$suite: ${took}s; DOES NOT reproduce $committed:"
		note "$agree"
		[ "$status" -ne 0 ] || status=1
	fi
done

# The numbers the page computes itself (no report prints them), from the
# committed files they come from: the page must quote each as computed.
log "zns-study: the numbers docs/zns-study.md computes itself"
if "$PY" -m ab.zns_page --check "$AB_ROOT/docs/zns-study.md" >"$out/zns-page.log" 2>&1; then
	note "zns-page: the page quotes all $(grep -c . "$out/zns-page.log") of its own numbers as computed ($out/zns-page.log)"
else
	note "zns-page: the page DOES NOT quote its own numbers as computed:"
	note "$(grep -e '^NOT IN THE PAGE' -e '^zns_page:' "$out/zns-page.log")"
	[ "$status" -ne 0 ] || status=1
fi

bound_py=$AB_ROOT/.venv/bin/python
if [ -x "$bound_py" ] && "$bound_py" -c 'import ortools' 2>/dev/null; then
	log "zns-study: zns-bound"
	step zns-bound "$PY" -m ab.zns_bound_run --out "$out/zns-bound" --seeds 10 --time-limit 20 &&
		note "zns-bound: ${took}s (not compared: a solve under a time limit)"
else
	note "zns-bound: not run: no OR-Tools in $bound_py (python3 -m venv .venv && .venv/bin/pip install -r hack/ab/zns_bound-requirements.txt)"
fi

if [ -n "$guest" ]; then
	log "zns-study: zns-guest-trace (the QEMU guest)"
	step zns-guest-trace "$AB_ROOT/hack/zoned/zns-trace-vm.sh" --out "$out/zns-guest-trace" &&
		note "zns-guest-trace: ${took}s (not compared: a sample of the daemon's timing)"
else
	note "zns-guest-trace: not run (--guest runs it)"
fi
log "zns-study: $out/summary"
exit "$status"
