#!/usr/bin/env bash
# The change to containerd's fetcher (patches/containerd/), against containerd's
# own tree at the version moby vendors (hack/containerd.pin).
#
# usage: hack/stack/test-containerd.sh [apply|export|check|test]
#   apply    build/containerd = the pinned containerd module (go.sum hash
#            checked), committed as branch "upstream", plus patches/containerd/
#            applied with git am (branch "patched")
#   export   write build/containerd's commits on top of upstream back to
#            patches/containerd/ (byte-stable, as hack/stack/patches.sh does)
#   check    apply, then the export reproduces patches/containerd/ byte for byte,
#            and the moby series carries each of its patches on the vendored
#            containerd (patches/*-vendor-containerd-*) as the same diff
#            without the tests
#   test     (default) check, then `go test -race ./core/remotes/docker/...`
#            in the tree and each fuzz target below for its count of inputs
#            (go_fuzz in hack/lib.sh; FUZZTIME overrides)
#
# Needs only Go and the Go module proxy (and git, jq).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CTRD_TREE=${CTRD_TREE:-$AB_BUILD/containerd}
CTRD_PATCHES=$AB_ROOT/patches/containerd
# The fuzz targets of the change: package, name and inputs (about 10 s each
# on a 2-core machine, measured 2026-12-01).
FUZZ_TARGETS=(
	"./core/remotes/docker FuzzParseContentRange 200000"
	"./core/remotes/docker FuzzResumableFetch 3000"
	"./core/remotes/docker FuzzParseRetryAfter 40000"
)
SERIES_HEADER='# Applied in order onto containerd (hack/containerd.pin) by hack/stack/test-containerd.sh; written by `hack/stack/test-containerd.sh export`.'

while read -r line; do
	case ${line%%=*} in
	MODULE) CTRD_MODULE=${line#*=} ;;
	VERSION) CTRD_VERSION=${line#*=} ;;
	SUM) CTRD_SUM=${line#*=} ;;
	esac
done < <(grep -v -e '^#' -e '^[[:space:]]*$' "$AB_ROOT/hack/containerd.pin")

series_files() {
	[ -f "$CTRD_PATCHES/series" ] || return 0
	grep -v -e '^#' -e '^[[:space:]]*$' "$CTRD_PATCHES/series" || true
}

# upstream_tree DEST: the pinned module's tree, committed into a new repository
# as branch "upstream" with the module's time as date (the same commit
# everywhere).
upstream_tree() {
	rm -rf "$1"
	module_tree "$CTRD_VERSION" "$CTRD_SUM" "$1" "containerd $CTRD_VERSION" \
		"The Go module $CTRD_MODULE@$CTRD_VERSION ($CTRD_SUM)." "$CTRD_MODULE"
}

# unexported: whether build/containerd holds changes that patches/containerd/
# does not (uncommitted, or commits not exported).
unexported() {
	local tmp rc=1
	[ -d "$CTRD_TREE/.git" ] || return 1
	[ -z "$(abgit -C "$CTRD_TREE" status --porcelain 2>/dev/null)" ] || return 0
	abgit -C "$CTRD_TREE" rev-parse -q --verify upstream >/dev/null || return 1
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/moby-ab-containerd.XXXXXX")
	export_from "$CTRD_TREE" "$tmp"
	diff -rq "$CTRD_PATCHES" "$tmp" >/dev/null 2>&1 || rc=0
	rm -rf "$tmp"
	return $rc
}

cmd_apply() {
	local tree=$CTRD_TREE files=() p
	if [ -z "${FORCE:-}" ] && unexported; then
		die "containerd: $tree has changes not exported to patches/containerd/ (hack/stack/test-containerd.sh export first, or FORCE=1 to discard them)"
	fi
	upstream_tree "$tree"
	abgit -C "$tree" checkout -q -b patched
	while read -r p; do
		[ -f "$CTRD_PATCHES/$p" ] || die "containerd: series lists $p, which is not in patches/containerd/"
		files+=("$CTRD_PATCHES/$p")
	done < <(series_files)
	if [ ${#files[@]} -gt 0 ] && ! abgit -C "$tree" am -q --committer-date-is-author-date "${files[@]}" >&2; then
		abgit -C "$tree" am --abort || true
		die "containerd: patches/containerd/ does not apply cleanly"
	fi
	log "containerd: $tree = $CTRD_VERSION + ${#files[@]} patch(es)"
}

export_from() { # tree outdir
	export_series "$1" upstream "$2" "$SERIES_HEADER"
}

cmd_export() {
	[ -d "$CTRD_TREE/.git" ] || die "containerd: no $CTRD_TREE (hack/stack/test-containerd.sh apply)"
	rm -rf "$CTRD_PATCHES"
	export_from "$CTRD_TREE" "$CTRD_PATCHES"
	log "containerd: exported $(series_files | wc -l) patch(es) to patches/containerd/"
}

cmd_check() {
	cmd_apply
	local tmp
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/moby-ab-containerd.XXXXXX")
	trap 'rm -rf "$tmp"' RETURN
	export_from "$CTRD_TREE" "$tmp"
	diff -ru "$CTRD_PATCHES" "$tmp" >&2 ||
		die "containerd: exporting the applied series does not reproduce patches/containerd/ byte for byte"
	log "containerd: the export reproduces patches/containerd/"
	vendored_check
}

# diffs PATCH [PREFIX]: the diffs of a format-patch file, without those of
# test files, with PREFIX put before every path (and without the hunks'
# function context, which the two trees' git attributes find differently).
diffs() {
	python3 - "$1" "${2:-}" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
body = text[text.index("\ndiff --git ") + 1:]
body = re.sub(r"\n-- \n[^\n]*\n*$", "\n", body)  # the signature
pre = sys.argv[2]
for sec in re.split(r"(?m)^(?=diff --git )", body):
    if not sec or re.match(r"diff --git a/\S*_test\.go ", sec):
        continue
    sec = re.sub(r"(?m)^(diff --git a/)(\S+) b/(\S+)$", lambda m: f"{m[1]}{pre}{m[2]} b/{pre}{m[3]}", sec)
    sec = re.sub(r"(?m)^(--- a/|\+\+\+ b/)", lambda m: m[1] + pre, sec)
    sec = re.sub(r"(?m)^(@@ [^@]* @@).*$", r"\1", sec)
    sys.stdout.write(sec)
PY
}

# vendored_check: the moby series' vendor patches are patches/containerd/,
# one for one, on vendor/github.com/containerd/containerd/v2/.
vendored_check() {
	local ours=() vend=() p i
	mapfile -t ours < <(series_files)
	while read -r p; do
		grep -q '^Subject: \[PATCH\] vendor: containerd ' "$AB_ROOT/patches/$p" && vend+=("$AB_ROOT/patches/$p")
	done < <(grep -v -e '^#' -e '^[[:space:]]*$' "$AB_ROOT/patches/series")
	[ ${#vend[@]} = ${#ours[@]} ] ||
		die "containerd: patches/containerd/ has ${#ours[@]} patch(es), the moby series carries ${#vend[@]} on the vendored containerd"
	for i in "${!ours[@]}"; do
		if ! diff -u <(diffs "$CTRD_PATCHES/${ours[i]}" vendor/github.com/containerd/containerd/v2/) <(diffs "${vend[i]}") >&2; then
			die "containerd: ${vend[i]##*/} does not carry ${ours[i]} (regenerate it from build/containerd; docs/containerd-fetcher.md)"
		fi
	done
	log "containerd: the moby series carries patches/containerd/ on its vendored copy"
}

cmd_test() {
	cmd_check
	cd "$CTRD_TREE"
	log "containerd: go test -race ./core/remotes/docker/..."
	GOFLAGS=-mod=mod go test -race -count=1 ./core/remotes/docker/...
	local t pkg name execs tmp
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/moby-ab-containerd-fuzz.XXXXXX")
	trap 'rm -rf "$tmp"' RETURN
	for t in "${FUZZ_TARGETS[@]}"; do
		read -r pkg name execs <<<"$t"
		TMPDIR=$tmp GOFLAGS=-mod=mod go_fuzz "$execs" "$pkg" "$name"
	done
}

case ${1:-test} in
apply) cmd_apply ;;
export) cmd_export ;;
check) cmd_check ;;
test) cmd_test ;;
*) die "usage: hack/stack/test-containerd.sh [apply|export|check|test]" ;;
esac
