#!/usr/bin/env bash
# Move the series to another upstream release.
#
#   start VERSION   materialise the module tree at VERSION (e.g. v2.0.0-beta.24)
#                   in build/rebase, on top of the pinned tree, and apply the
#                   series with a three-way merge (git am -3); stop at the first
#                   patch that conflicts and list its files
#   continue        after resolving a conflict in build/rebase (edit, git add):
#                   finish that patch and apply the rest
#   adopt           the series applies on VERSION: move the pin (hack/upstream.pin,
#                   the moby/ gitlink), export the rebased commits to patches/,
#                   and re-create build/moby and build/moby-patched from the new pin
#   newest          report whether the series applies (three-way) to the newest
#                   module version the proxy has; informational, always exits 0
#
# The docker version of a module version is read from its tree
# (releases/versions.yaml: at a release tag, "next" is the version being
# released); VERSION=... overrides it. The tag's commit comes from the module's
# origin where the proxy records it; otherwise it must be given: COMMIT=<sha>.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

REBASE_TREE=$AB_BUILD/rebase
STATE=.git/moby-ab-rebase # the module version being rebased onto

series() { grep -v -e '^#' -e '^[[:space:]]*$' "$AB_ROOT/patches/series"; }

# Build TREE: the pinned tree (branch old-upstream) with the series applied on it
# (branch old-patched: every blob a patch's index line names, for the three-way
# merge), the module at VERSION on top of old-upstream (branch upstream, tag
# upstream-base), and branch patched checked out there.
make_tree() { # tree version
	local tree=$1 version=$2 files
	"$AB_ROOT/hack/stack/upstream.sh"
	rm -rf "$tree"
	abgit clone -q --no-hardlinks -b upstream "$STOCK_TREE" "$tree"
	abgit -C "$tree" branch -q -m upstream old-upstream
	abgit -C "$tree" checkout -q -b old-patched
	mapfile -t files < <(series | sed "s|^|$AB_ROOT/patches/|")
	[ ${#files[@]} -eq 0 ] || abgit -C "$tree" am -q --committer-date-is-author-date "${files[@]}" >&2 ||
		die "rebase: the series does not apply to the pinned tree; fix that first (make patches-check)"
	abgit -C "$tree" checkout -q -b upstream old-upstream
	module_tree "$version" "" "$tree" "upstream: $UPSTREAM_MODULE@$version" \
		"Tree of $UPSTREAM_MODULE@$version, on top of the pinned $UPSTREAM_MODULE_VERSION so that git am -3 finds the old blobs."
	vendor_tree "$tree"
	abgit -C "$tree" tag -f upstream-base >/dev/null
	abgit -C "$tree" checkout -q -b patched
	echo "$version" >"$tree/$STATE"
}

# Apply the series' patches that are not yet in the tree; stop at a conflict.
apply_rest() { # tree
	local tree=$1 done_n files=()
	done_n=$(abgit -C "$tree" rev-list --count upstream-base..HEAD)
	mapfile -t files < <(series | tail -n +$((done_n + 1)) | sed "s|^|$AB_ROOT/patches/|")
	[ ${#files[@]} -eq 0 ] && return 0
	if ! abgit -C "$tree" am -q -3 --committer-date-is-author-date "${files[@]}" >&2; then
		report_conflict "$tree"
		return 1
	fi
}

report_conflict() { # tree
	local tree=$1 p n
	p=$(abgit -C "$tree" am --show-current-patch=raw 2>/dev/null | sed -n 's/^Subject: \(\[PATCH\] \)\{0,1\}//p' | head -1)
	n=$(abgit -C "$tree" rev-list --count upstream-base..HEAD)
	echo "rebase: patch $((n + 1))/$(series | wc -l) conflicts: ${p:-?}" >&2
	echo "rebase: files with conflicts:" >&2
	abgit -C "$tree" diff --name-only --diff-filter=U | sed 's/^/    /' >&2
}

cmd_start() {
	local version=${1:-}
	[ -n "$version" ] || die "usage: make rebase UPSTREAM=<module version> (e.g. v2.0.0-beta.24)"
	make_tree "$REBASE_TREE" "$version"
	log "rebase: applying $(series | wc -l) patch(es) onto $UPSTREAM_MODULE@$version (three-way)"
	if ! apply_rest "$REBASE_TREE"; then
		cat >&2 <<EOF
rebase: resolve the conflict in $REBASE_TREE (edit, build, git add), then
    make rebase-continue
or give up with: rm -rf $REBASE_TREE
EOF
		exit 1
	fi
	log "rebase: the series applies on $version; review $REBASE_TREE, then: make rebase-adopt"
}

cmd_continue() {
	[ -f "$REBASE_TREE/$STATE" ] || die "rebase: nothing in progress (make rebase UPSTREAM=...)"
	if [ -d "$REBASE_TREE/.git/rebase-apply" ]; then
		if ! abgit -C "$REBASE_TREE" am --continue >&2; then
			[ -n "$(abgit -C "$REBASE_TREE" diff --name-only --diff-filter=U)" ] ||
				[ -d "$REBASE_TREE/.git/rebase-apply" ] ||
				die "rebase: git am --continue failed in $REBASE_TREE"
			report_conflict "$REBASE_TREE"
			echo "rebase: resolve it in $REBASE_TREE (edit, git add), then: make rebase-continue" >&2
			exit 1
		fi
	fi
	if ! apply_rest "$REBASE_TREE"; then
		echo "rebase: resolve it in $REBASE_TREE, then: make rebase-continue" >&2
		exit 1
	fi
	log "rebase: the series applies on $(cat "$REBASE_TREE/$STATE"); review $REBASE_TREE, then: make rebase-adopt"
}

cmd_adopt() {
	local version json sum mtime commit dv n
	[ -f "$REBASE_TREE/$STATE" ] || die "rebase: nothing to adopt (make rebase UPSTREAM=...)"
	[ ! -d "$REBASE_TREE/.git/rebase-apply" ] || die "rebase: a patch is still being applied in $REBASE_TREE (make rebase-continue)"
	[ -z "$(abgit -C "$REBASE_TREE" status --porcelain --untracked-files=no)" ] ||
		die "rebase: $REBASE_TREE has uncommitted changes"
	version=$(cat "$REBASE_TREE/$STATE")
	if [ -d "$PATCHED_TREE/.git" ] && [ "${FORCE:-}" != 1 ]; then
		case "$("$AB_ROOT/hack/stack/patches.sh" state)" in
		local-commits | dirty) die "rebase: $PATCHED_TREE has work not exported to patches/ (export it and rebase again, or FORCE=1)" ;;
		esac
	fi
	json=$(module_download "$version")
	sum=$(jq -r .Sum <<<"$json")
	mtime=$(jq -r .Time "$(jq -r .Info <<<"$json")")
	commit=${COMMIT:-$(jq -r '.Origin.Hash // empty' <<<"$json")}
	[[ $commit =~ ^[0-9a-f]{40}$ ]] ||
		die "rebase: the proxy records no commit for $version; give the release tag's commit: COMMIT=<40 hex digits>"
	dv=${VERSION:-$(abgit -C "$REBASE_TREE" show upstream-base:releases/versions.yaml 2>/dev/null | sed -n 's/^[[:space:]]*next:[[:space:]]*"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p')}
	[ -n "$dv" ] || die "rebase: cannot tell the docker version of $version; give it: VERSION=29.x.y"
	log "rebase: adopting docker-v$dv ($commit) = $UPSTREAM_MODULE@$version ($sum)"
	PATCHED_TREE=$REBASE_TREE "$AB_ROOT/hack/stack/patches.sh" export
	cat >"$AB_ROOT/hack/upstream.pin.tmp" <<EOF
$(grep '^#' "$AB_ROOT/hack/upstream.pin")
VERSION=$dv
COMMIT=$commit
MODULE=$UPSTREAM_MODULE
MODULE_VERSION=$version
MODULE_SUM=$sum
TIME=$mtime
EOF
	mv "$AB_ROOT/hack/upstream.pin.tmp" "$AB_ROOT/hack/upstream.pin"
	if git -C "$AB_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$AB_ROOT" update-index --add --cacheinfo "160000,$commit,moby"
	fi
	rm -rf "$STOCK_TREE" "$PATCHED_TREE"
	FORCE=1 "$AB_ROOT/hack/stack/patches.sh" apply
	[ "$(abgit -C "$STOCK_TREE" rev-parse 'upstream-base^{tree}')" = "$(abgit -C "$REBASE_TREE" rev-parse 'upstream-base^{tree}')" ] ||
		die "rebase: the re-created $STOCK_TREE differs from the tree the series was rebased on"
	n=$(abgit -C "$PATCHED_TREE" rev-list --count upstream-base..HEAD)
	rm -rf "$REBASE_TREE"
	log "rebase: pin moved to docker-v$dv; $n patch(es) in patches/. Next: make patches-check, update the docs' version, commit"
}

cmd_newest() {
	local newest tmp
	newest=$(GOFLAGS=-mod=mod go list -m -versions "$UPSTREAM_MODULE" 2>/dev/null | tr ' ' '\n' | tail -n 1) || true
	if [ -z "$newest" ] || [ "$newest" = "$UPSTREAM_MODULE" ]; then
		echo "upstream drift: cannot list $UPSTREAM_MODULE versions (module proxy unreachable?)"
		return 0
	fi
	if [ "$newest" = "$UPSTREAM_MODULE_VERSION" ]; then
		echo "upstream drift: none; the pin ($UPSTREAM_MODULE_VERSION, docker-v$UPSTREAM_VERSION) is the newest module version"
		return 0
	fi
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	if ! (make_tree "$tmp/tree" "$newest") >"$tmp/log" 2>&1; then
		echo "upstream drift: $newest is newer than the pin ($UPSTREAM_MODULE_VERSION); could not materialise it:"
		tail -n 3 "$tmp/log"
		return 0
	fi
	if apply_rest "$tmp/tree" 2>"$tmp/log"; then
		echo "upstream drift: $newest is newer than the pin ($UPSTREAM_MODULE_VERSION); the series applies to it (three-way): make rebase UPSTREAM=$newest"
	else
		echo "upstream drift: $newest is newer than the pin ($UPSTREAM_MODULE_VERSION); the series does NOT apply:"
		cat "$tmp/log"
		abgit -C "$tmp/tree" am --abort >/dev/null 2>&1 || true
	fi
	return 0
}

case "${1:-}" in
start) cmd_start "${2:-}" ;;
continue) cmd_continue ;;
adopt) cmd_adopt ;;
newest) cmd_newest ;;
*) die "usage: hack/stack/rebase.sh start VERSION | continue | adopt | newest" ;;
esac
