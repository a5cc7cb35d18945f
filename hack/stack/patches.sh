#!/usr/bin/env bash
# The patch queue: patches/series lists git format-patch files, applied in order
# on the upstream tree (build/moby) to make the patched tree (build/moby-patched).
#
#   apply    re-create build/moby-patched from build/moby + patches/ (git am)
#   export   write the patched tree's commits back to patches/ (byte-stable)
#   ensure   apply if the patched tree is missing or patches/ changed since the
#            last apply; keep a tree that has new local commits
#   hash     short hash identifying the series the patched tree holds
#   state    missing | clean | patches-changed | upstream-changed | local-commits | dirty
#   check    every patch has the trailers Upstream: and Drop-when:, the series
#            applies cleanly on a fresh tree, exports byte for byte to patches/,
#            and every patch builds on its own (bisectable) and leaves the Go
#            files it touches (outside vendor/) as gofmt writes them;
#            PATCHES_CHECK_FROM=N builds and formats only patches N and later
#            (the rest of the check is whole; CI checks every patch)
#
# Work on a patch: edit and commit in build/moby-patched (one logical change per
# commit; fix-ups squashed into the commit they fix), then `make patches-export`.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PATCHES=$AB_ROOT/patches
STAMP=.git/moby-ab-applied
SERIES_HEADER='# Applied in order onto build/moby by hack/stack/patches.sh; written by `make patches-export`.'

series_files() { # [dir]: the patch files a series lists, in order
	local series=${1:-$PATCHES}/series
	[ -f "$series" ] || return 0
	grep -v -e '^#' -e '^[[:space:]]*$' "$series" || true
}

dir_digest() { # dir: sha256 of the series file and every patch it lists, in order
	local p
	{
		cat "$1/series" 2>/dev/null || true
		series_files "$1" | while read -r p; do cat "$1/$p"; done
	} | sha256sum | cut -c1-64
}

patches_digest() { dir_digest "$PATCHES"; }

apply_into() { # tree
	local tree=$1 p
	rm -rf "$tree"
	abgit clone -q --no-hardlinks -b upstream "$STOCK_TREE" "$tree"
	abgit -C "$tree" checkout -q -b patched
	local files=()
	while read -r p; do
		[ -f "$PATCHES/$p" ] || die "patches: series lists $p, which is not in patches/"
		files+=("$PATCHES/$p")
	done < <(series_files)
	if [ ${#files[@]} -gt 0 ]; then
		if ! abgit -C "$tree" am -q --committer-date-is-author-date "${files[@]}" >&2; then
			p=$(abgit -C "$tree" am --show-current-patch=raw 2>/dev/null | sed -n 's/^Subject: //p' | head -1)
			abgit -C "$tree" am --abort || true
			die "patches: the series does not apply cleanly (failed at: ${p:-?})"
		fi
	fi
	printf '%s %s\n' "$(abgit -C "$tree" rev-parse HEAD)" "$(patches_digest)" >"$tree/$STAMP"
}

export_from() { # tree outdir
	export_series "$1" upstream-base "$2" "$SERIES_HEADER"
}

tree_state() { # prints: missing | clean | patches-changed | upstream-changed | local-commits | dirty
	local tree=$PATCHED_TREE head digest
	[ -d "$tree/.git" ] || {
		echo missing
		return
	}
	[ -z "$(abgit -C "$tree" status --porcelain --untracked-files=no)" ] || {
		echo dirty
		return
	}
	read -r head digest <"$tree/$STAMP" 2>/dev/null || {
		echo local-commits
		return
	}
	if [ "$head" != "$(abgit -C "$tree" rev-parse HEAD)" ]; then
		echo local-commits
	elif [ "$(abgit -C "$tree" rev-parse 'upstream-base^{tree}')" != "$(abgit -C "$STOCK_TREE" rev-parse 'upstream-base^{tree}')" ]; then
		echo upstream-changed
	elif [ "$digest" != "$(patches_digest)" ]; then
		echo patches-changed
	else
		echo clean
	fi
}

cmd_apply() {
	"$AB_ROOT/hack/stack/upstream.sh"
	local state
	state=$(tree_state)
	case "$state" in
	local-commits | dirty)
		[ "${FORCE:-}" = 1 ] ||
			die "patches: $PATCHED_TREE has $state that are not in patches/ (run 'make patches-export' first, or FORCE=1 to discard them)"
		;;
	esac
	log "patches: applying $(series_files | wc -l) patch(es) onto upstream"
	apply_into "$PATCHED_TREE"
}

cmd_ensure() {
	"$AB_ROOT/hack/stack/upstream.sh"
	case "$(tree_state)" in
	missing | patches-changed | upstream-changed) cmd_apply ;;
	clean) ;;
	local-commits) warn "patches: building $PATCHED_TREE with commits not exported to patches/ (make patches-export)" ;;
	dirty) warn "patches: building $PATCHED_TREE with uncommitted changes" ;;
	esac
}

cmd_export() {
	[ -d "$PATCHED_TREE/.git" ] || die "patches: no patched tree at $PATCHED_TREE (make patches-apply)"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	export_from "$PATCHED_TREE" "$tmp"
	mkdir -p "$PATCHES"
	find "$PATCHES" -maxdepth 1 -name '*.patch' -delete
	cp "$tmp"/* "$PATCHES/"
	printf '%s %s\n' "$(abgit -C "$PATCHED_TREE" rev-parse HEAD)" "$(patches_digest)" >"$PATCHED_TREE/$STAMP"
	log "patches: exported $(series_files | wc -l) patch(es) to patches/"
}

cmd_hash() {
	local tmp suffix=
	[ -d "$PATCHED_TREE/.git" ] || die "patches: no patched tree at $PATCHED_TREE (make patches-apply)"
	tmp=$(mktemp -d)
	export_from "$PATCHED_TREE" "$tmp"
	[ -z "$(abgit -C "$PATCHED_TREE" status --porcelain --untracked-files=no)" ] || suffix=.dirty
	echo "$(dir_digest "$tmp" | cut -c1-10)$suffix"
	rm -rf "$tmp"
}

# check_trailers: every patch's message says whether it is meant for upstream
# and when it can be dropped, as the trailers "Upstream: yes|no ..." and
# "Drop-when: ...".
check_trailers() { # [dir]
	local dir=${1:-$PATCHES} p msg bad=0
	while read -r p; do
		msg=$(sed '/^---$/q' "$dir/$p")
		if [ "$(grep -cE '^Upstream: (yes|no)\b' <<<"$msg")" != 1 ]; then
			echo "patches check: $p: needs one trailer 'Upstream: yes ...' or 'Upstream: no (why)'" >&2
			bad=1
		fi
		if [ "$(grep -cE '^Drop-when: [^[:space:]]' <<<"$msg")" != 1 ]; then
			echo "patches check: $p: needs one trailer 'Drop-when: <how to tell it is no longer needed>'" >&2
			bad=1
		fi
	done < <(series_files "$dir")
	return "$bad"
}

cmd_check() {
	"$AB_ROOT/hack/stack/upstream.sh"
	local n i commit
	log "patches check: every patch says whether it is meant for upstream and when it can be dropped"
	check_trailers || die "patches check: trailers missing (see README, Changing a patch)"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	log "patches check: the series applies cleanly onto upstream"
	apply_into "$tmp/tree"
	log "patches check: export reproduces patches/ byte for byte"
	export_from "$tmp/tree" "$tmp/export"
	# patches/containerd/ is a series of its own (hack/stack/test-containerd.sh).
	if ! diff -ru --exclude=containerd "$PATCHES" "$tmp/export" >&2; then
		die "patches check: exporting the applied series does not reproduce patches/ (run make patches-export and commit)"
	fi
	n=$(abgit -C "$tmp/tree" rev-list --count upstream-base..HEAD)
	i=0
	local from=${PATCHES_CHECK_FROM:-1}
	[[ $from =~ ^[1-9][0-9]*$ ]] || die "patches check: PATCHES_CHECK_FROM wants a patch number (got '$from')"
	for commit in $(abgit -C "$tmp/tree" rev-list --reverse upstream-base..HEAD); do
		i=$((i + 1))
		[ "$i" -ge "$from" ] || continue
		log "patches check: [$i/$n] builds on its own: $(abgit -C "$tmp/tree" log -1 --format=%s "$commit")"
		abgit -C "$tmp/tree" checkout -q "$commit"
		mapfile -t pkgs < <(changed_packages "$tmp/tree" "$commit")
		(cd "$tmp/tree" && go build -trimpath -tags "$GO_BUILDTAGS" ./... && go vet -tags "$GO_BUILDTAGS" "${pkgs[@]}") ||
			die "patches check: patch $i/$n does not build on its own"
		mapfile -t unformatted < <(changed_go_files "$tmp/tree" "$commit" | (cd "$tmp/tree" && xargs -r gofmt -l))
		[ "${#unformatted[@]}" -eq 0 ] ||
			die "patches check: patch $i/$n leaves Go files gofmt would change: ${unformatted[*]}"
	done
	log "patches check: ok ($n patch(es)${PATCHES_CHECK_FROM:+, built from $from on})"
}

changed_go_files() { # tree commit: the Go files outside vendor/ the commit leaves
	abgit -C "$1" diff-tree --no-commit-id --name-only --diff-filter=d -r "$2" -- '*.go' ':!vendor/**'
}

changed_packages() { # tree commit: Go packages (./dir) the commit touches
	abgit -C "$1" diff-tree --no-commit-id --name-only -r "$2" -- '*.go' |
		xargs -r -n1 dirname | sort -u | while read -r d; do
		[ -d "$1/$d" ] && ls "$1/$d"/*.go >/dev/null 2>&1 && echo "./$d"
	done
}

case "${1:-}" in
apply) cmd_apply ;;
export) cmd_export ;;
ensure) cmd_ensure ;;
hash) cmd_hash ;;
state) tree_state ;;
check-trailers) check_trailers "${2:-}" ;;
check) cmd_check ;;
*) die "usage: hack/stack/patches.sh apply|export|ensure|hash|state|check|check-trailers [dir]" ;;
esac
