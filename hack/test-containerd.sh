#!/usr/bin/env bash
# The change to containerd's fetcher (patches/containerd/), against containerd's
# own tree at the version moby vendors (hack/containerd.pin).
#
# usage: hack/test-containerd.sh [apply|export|check|test]
#   apply    build/containerd = the pinned containerd module (go.sum hash
#            checked), committed as branch "upstream", plus patches/containerd/
#            applied with git am (branch "patched")
#   export   write build/containerd's commits on top of upstream back to
#            patches/containerd/ (byte-stable, as hack/patches.sh does)
#   check    apply, then the export reproduces patches/containerd/ byte for byte
#   test     (default) check, then `go test -race ./core/remotes/docker/...`
#            in the tree and each fuzz target below for FUZZTIME (10s) each
#
# Needs only Go and the Go module proxy (and git, jq).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CTRD_TREE=${CTRD_TREE:-$AB_BUILD/containerd}
CTRD_PATCHES=$AB_ROOT/patches/containerd
FUZZTIME=${FUZZTIME:-10s}
# The fuzz targets of the change: package and name.
FUZZ_TARGETS=(
	"./core/remotes/docker FuzzParseContentRange"
	"./core/remotes/docker FuzzResumableFetch"
)
SERIES_HEADER='# Applied in order onto containerd (hack/containerd.pin) by hack/test-containerd.sh; written by `hack/test-containerd.sh export`.'

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
		die "containerd: $tree has changes not exported to patches/containerd/ (hack/test-containerd.sh export first, or FORCE=1 to discard them)"
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
	[ -d "$CTRD_TREE/.git" ] || die "containerd: no $CTRD_TREE (hack/test-containerd.sh apply)"
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
}

cmd_test() {
	cmd_check
	cd "$CTRD_TREE"
	log "containerd: go test -race ./core/remotes/docker/..."
	GOFLAGS=-mod=mod go test -race -count=1 ./core/remotes/docker/...
	local t pkg name tmp
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/moby-ab-containerd-fuzz.XXXXXX")
	trap 'rm -rf "$tmp"' RETURN
	for t in "${FUZZ_TARGETS[@]}"; do
		read -r pkg name <<<"$t"
		log "containerd: fuzz $pkg $name for $FUZZTIME"
		TMPDIR=$tmp GOFLAGS=-mod=mod go test -count=1 -run '^$' -fuzz "^$name\$" \
			-fuzztime "$FUZZTIME" -parallel 2 "$pkg"
	done
}

case ${1:-test} in
apply) cmd_apply ;;
export) cmd_export ;;
check) cmd_check ;;
test) cmd_test ;;
*) die "usage: hack/test-containerd.sh [apply|export|check|test]" ;;
esac
