#!/usr/bin/env bash
# The kernel's I/O controller beside the daemon's own pacing, on one
# neighbour: checkpoints.io-weight (blk-iocost, BFQ) against no option, a
# fixed write pace and the device pace, in the zoned guest (QEMU,
# TCG), a pure cgroup v2 host with blk-iocost and BFQ, which this project's
# hosts are not.
#
# hack/zoned/zns-vm/docker-iocost.sh runs in the guest (its header says what
# a run is) on an ext4 file system on the guest's conventional namespace,
# which QEMU makes a disk of --disk-rate bytes a second (throttling.bps-total;
# with cache=unsafe, so that the host's own disk, shared and noisy, is not
# in the measurement: a flush is not passed to it),
# and `python3 -m ab.iocost_guest report` makes DIR/README.md, DIR/iocost.json
# and DIR/iocost.png from what it printed: per variant, the checkpoint's
# time and the neighbour's commit latency during it (p50, p99, longest)
# against the same repetition's run without a checkpoint. The guest runs
# under TCG: its times are an emulator's; compare ratios within one run.
#
# usage: hack/zoned/zns-iocost-vm.sh --out DIR [--reps N] [--mib MIB] [--cap RATE]
#            [--weight W] [--disk-rate RATE] [--variants "alone nocap cap auto iocost bfq"]
#   --reps     repetitions of every variant [6]
#   --mib      the memory holder's size [96]
#   --cap      the fixed cap's rate [16MiB]
#   --weight   checkpoints.io-weight, 10-1000 as --blkio-weight [10]
#   --disk-rate  the emulated disk's rate, bytes a second (or 64MiB) [64MiB]
# DIR gets console.log (the guest's), the guest's results (runs.tsv, the
# neighbour's commits per run, gzipped; the qos and model lines; of the
# daemon's logs, the lines saying how each checkpoint was written,
# daemon-lines.log) and the report. It needs `make build` and
# hack/hosts/images.sh build; the default takes 20-30 minutes on two cores.
# It starts no daemon on this host.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=hack/zoned/guest.sh
. "$AB_ROOT/hack/zoned/guest.sh"

reps=6 mib=96 cap=16MiB weight=10 rate=64MiB variants="alone nocap cap auto iocost bfq" out=''
while [ $# -gt 0 ]; do
	case $1 in
	--reps) reps=$2 && shift 2 ;;
	--mib) mib=$2 && shift 2 ;;
	--cap) cap=$2 && shift 2 ;;
	--weight) weight=$2 && shift 2 ;;
	--disk-rate) rate=$2 && shift 2 ;;
	--variants) variants=$2 && shift 2 ;;
	--out) out=$2 && shift 2 ;;
	-h | --help) sed -n '/^# usage:/,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0" && exit 0 ;;
	*) die "zns-iocost-vm: unknown argument '$1' (see --help)" ;;
	esac
done
[ -n "$out" ] || die "usage: hack/zoned/zns-iocost-vm.sh --out DIR [--reps N] [--mib MIB] [--cap RATE] [--weight W] [--disk-rate RATE] [--variants LIST]"
bps=$(numfmt --from=iec-i "${rate%B}" 2>/dev/null) && [ "$bps" -ge $((1 << 20)) ] ||
	die "zns-iocost-vm: --disk-rate wants bytes a second, 1MiB or more (got '$rate')"
[[ $reps =~ ^[1-9][0-9]*$ ]] || die "zns-iocost-vm: --reps wants a number, 1 or more (got '$reps')"
[[ $mib =~ ^[1-9][0-9]*$ ]] && [ "$mib" -le 512 ] || die "zns-iocost-vm: --mib wants 1 to 512 (got '$mib')"
[[ $weight =~ ^[1-9][0-9]*$ ]] && [ "$weight" -ge 10 ] && [ "$weight" -le 1000 ] || die "zns-iocost-vm: --weight wants 10 to 1000 (got '$weight')"
for v in $variants; do
	case $v in
	alone | nocap | cap | auto | iocost | bfq) ;;
	*) die "zns-iocost-vm: unknown variant '$v' (alone nocap cap auto iocost bfq)" ;;
	esac
done
[[ " $variants " == *" alone "* ]] || die "zns-iocost-vm: --variants needs alone (the report's reference)"
mkdir -p "$out"
[ -z "$(ls -A "$out")" ] || die "zns-iocost-vm: $out is not empty"

need_series_build zns-iocost-vm

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$AB_ROOT/hack/zoned/zns-vm/docker-root.sh" "$tmp/root"

nvar=$(wc -w <<<"$variants")
export ZNS_VM_PLAIN_SIZE=3G ZNS_VM_MEM=${ZNS_VM_MEM:-2048}
export ZNS_VM_PLAIN_DRIVE="cache=unsafe,throttling.bps-total=$bps"
export ZNS_VM_ENV="ZNS_IOCOST_REPS=$reps ZNS_IOCOST_MIB=$mib ZNS_IOCOST_CAP=$cap ZNS_IOCOST_WEIGHT=$weight ZNS_IOCOST_DISK_BPS=$bps ZNS_IOCOST_VARIANTS=${variants// /,}"
# Under TCG a run (a start, a holder, a checkpoint) takes 20-60 s.
export ZNS_VM_TIMEOUT=${ZNS_VM_TIMEOUT:-$((600 + reps * nvar * 120))}
log "zns-iocost-vm: $reps repetitions of $variants, a $mib MiB holder; the guest may take up to ${ZNS_VM_TIMEOUT}s"
guest_run zns-iocost-vm "$tmp/root" /docker-iocost.sh ZNS-IOCOST "$out" runs.tsv
# kept small: the commits compressed, of the daemons' logs the lines that
# say how each checkpoint was written
gzip -9 "$out"/*.commits
for f in "$out"/dockerd-*.log; do
	grep -h -e 'msg="Checkpoint created"' -e 'checkpoints.io-weight' -e 'Checkpoint images are written' "$f" |
		sed "s|^|$(basename "$f" .log): |" >>"$out/daemon-lines.log" || true
done
rm -f "$out"/dockerd-*.log "$out/dockerd.log"
PYTHONPATH=$AB_ROOT/hack ${PYTHON:-/usr/bin/python3} -m ab.iocost_guest report "$out"
log "zns-iocost-vm: $out/README.md"
