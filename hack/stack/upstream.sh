#!/usr/bin/env bash
# Materialise the pinned upstream tree as a git repository in build/moby.
#
# With the moby/ submodule checked out at the pinned commit, build/moby is a
# clone of it. Without it (the usual case: no network beyond the package
# registries), the identical daemon tree comes from the Go module
# module version in hack/upstream.pin, whose go.sum hash is checked against the
# pin before anything is copied, and its vendor/ (which upstream commits and
# the module zip leaves out) from `go mod vendor`. Either way build/moby has one branch, "upstream",
# and the stock daemon is built from it unmodified.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

materialise_from_submodule() {
	log "upstream: cloning the moby/ submodule at $UPSTREAM_COMMIT"
	abgit clone -q --no-checkout "$AB_ROOT/moby" "$STOCK_TREE.tmp"
	abgit -C "$STOCK_TREE.tmp" checkout -q -B upstream "$UPSTREAM_COMMIT"
}

materialise_from_module() {
	module_tree "$UPSTREAM_MODULE_VERSION" "$UPSTREAM_MODULE_SUM" "$STOCK_TREE.tmp" \
		"upstream: docker-v$UPSTREAM_VERSION" \
		"Tree of $UPSTREAM_MODULE@$UPSTREAM_MODULE_VERSION ($UPSTREAM_MODULE_SUM), moby commit $UPSTREAM_COMMIT, with vendor/ as go mod vendor writes it."
	vendor_tree "$STOCK_TREE.tmp"
}

PIN_STAMP=.git/moby-ab-pin
# What the stamp holds: the module version and the tree's layout (a tree
# made before vendor/ was part of it is made again).
PIN_LAYOUT="$UPSTREAM_MODULE_VERSION vendor"

main() {
	if [ -e "$STOCK_TREE/.git" ] && [ "$(cat "$STOCK_TREE/$PIN_STAMP" 2>/dev/null)" != "$PIN_LAYOUT" ] &&
		[ -z "$(abgit -C "$STOCK_TREE" status --porcelain)" ]; then
		log "upstream: the pin moved to $PIN_LAYOUT; re-creating $STOCK_TREE"
		rm -rf "$STOCK_TREE"
	fi
	if [ -e "$STOCK_TREE/.git" ]; then
		if abgit -C "$STOCK_TREE" diff --quiet HEAD -- && [ -z "$(abgit -C "$STOCK_TREE" status --porcelain)" ]; then
			exit 0
		fi
		die "upstream: $STOCK_TREE has local changes; the stock tree must stay pristine (remove it to re-create it)"
	fi
	rm -rf "$STOCK_TREE.tmp"
	mkdir -p "$AB_BUILD"
	if [ -n "$(git -C "$AB_ROOT/moby" rev-parse --verify -q "$UPSTREAM_COMMIT^{commit}" 2>/dev/null)" ] &&
		[ "$(git -C "$AB_ROOT/moby" rev-parse --show-toplevel 2>/dev/null)" = "$AB_ROOT/moby" ]; then
		materialise_from_submodule
	else
		materialise_from_module
	fi
	abgit -C "$STOCK_TREE.tmp" tag -f upstream-base >/dev/null
	echo "$PIN_LAYOUT" >"$STOCK_TREE.tmp/$PIN_STAMP"
	mv "$STOCK_TREE.tmp" "$STOCK_TREE"
	log "upstream: $STOCK_TREE at $(abgit -C "$STOCK_TREE" rev-parse --short HEAD)"
}

main "$@"
