#!/usr/bin/env bash
# Materialise the pinned upstream tree as a git repository in build/moby.
#
# With the moby/ submodule checked out at the pinned commit, build/moby is a
# clone of it. Without it (the usual case: no network beyond the package
# registries), the identical daemon tree comes from the Go module
# github.com/moby/moby/v2@v2.0.0-beta.21, whose go.sum hash is checked against the
# pin before anything is copied. Either way build/moby has one branch, "upstream",
# and the stock daemon is built from it unmodified.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

materialise_from_submodule() {
	log "upstream: cloning the moby/ submodule at $UPSTREAM_COMMIT"
	abgit clone -q --no-checkout "$AB_ROOT/moby" "$STOCK_TREE.tmp"
	abgit -C "$STOCK_TREE.tmp" checkout -q -B upstream "$UPSTREAM_COMMIT"
}

materialise_from_module() {
	local json dir sum mtime
	log "upstream: fetching Go module $UPSTREAM_MODULE@$UPSTREAM_MODULE_VERSION"
	json=$(GOFLAGS=-mod=mod go mod download -json "$UPSTREAM_MODULE@$UPSTREAM_MODULE_VERSION") ||
		die "upstream: go mod download failed (is the Go module proxy reachable?)"
	dir=$(jq -r .Dir <<<"$json")
	sum=$(jq -r .Sum <<<"$json")
	[ "$sum" = "$UPSTREAM_MODULE_SUM" ] ||
		die "upstream: module hash mismatch: got $sum, pinned $UPSTREAM_MODULE_SUM"
	[ "$(jq -r .Origin.Hash <<<"$json")" = "$UPSTREAM_COMMIT" ] ||
		warn "upstream: module origin is $(jq -r .Origin.Hash <<<"$json"), pinned $UPSTREAM_COMMIT"
	# Commit date = the tag's time, so the commit hash is the same everywhere.
	mtime=$(jq -r .Time "$(jq -r .Info <<<"$json")")
	log "upstream: $sum verified; copying $dir"
	mkdir -p "$STOCK_TREE.tmp"
	cp -a "$dir/." "$STOCK_TREE.tmp/"
	chmod -R u+w "$STOCK_TREE.tmp"
	abgit -C "$STOCK_TREE.tmp" init -q -b upstream
	abgit -C "$STOCK_TREE.tmp" add -A -f .
	GIT_AUTHOR_DATE=$mtime GIT_COMMITTER_DATE=$mtime \
		abgit -C "$STOCK_TREE.tmp" commit -q \
		-m "upstream: docker-v$UPSTREAM_VERSION" \
		-m "Tree of $UPSTREAM_MODULE@$UPSTREAM_MODULE_VERSION ($UPSTREAM_MODULE_SUM), moby commit $UPSTREAM_COMMIT."
}

main() {
	if [ -e "$STOCK_TREE/.git" ]; then
		if abgit -C "$STOCK_TREE" diff --quiet HEAD -- && [ -z "$(abgit -C "$STOCK_TREE" status --porcelain)" ]; then
			exit 0
		fi
		die "upstream: $STOCK_TREE has local changes; the stock tree must stay pristine (remove it to re-create it)"
	fi
	command -v jq >/dev/null || die "upstream: jq is required (hack/install-deps.sh installs it)"
	rm -rf "$STOCK_TREE.tmp"
	mkdir -p "$AB_BUILD"
	if [ -n "$(git -C "$AB_ROOT/moby" rev-parse --verify -q "$UPSTREAM_COMMIT^{commit}" 2>/dev/null)" ] &&
		[ "$(git -C "$AB_ROOT/moby" rev-parse --show-toplevel 2>/dev/null)" = "$AB_ROOT/moby" ]; then
		materialise_from_submodule
	else
		materialise_from_module
	fi
	abgit -C "$STOCK_TREE.tmp" tag -f upstream-base >/dev/null
	mv "$STOCK_TREE.tmp" "$STOCK_TREE"
	log "upstream: $STOCK_TREE at $(abgit -C "$STOCK_TREE" rev-parse --short HEAD)"
}

main "$@"
