#!/usr/bin/env bash
# Build dockerd (and docker-proxy) from the stock and the patched trees with the
# same toolchain and flags. Only the version strings differ between the two
# builds' inputs: stock reports the upstream version (hack/upstream.pin),
# patched <version>+ab.<series hash>.
#
# usage: hack/stack/build.sh [stock|patched|all]   (default: all)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

BIN=$AB_ROOT/bin
# The upstream tag's commit time, so builds are reproducible.
BUILDTIME=$(date -u -d "$UPSTREAM_TIME" +%Y-%m-%dT%H:%M:%S.000000000+00:00)

# Upstream's flags (hack/make.sh, hack/make/.binary, hack/make/.go-autogen), plus
# -trimpath so that the two trees' locations do not leak into the binaries.
go_build() { # tree out pkg version commit
	local tree=$1 out=$2 pkg=$3 version=$4 commit=$5 v=github.com/moby/moby/v2/dockerversion
	(
		cd "$tree"
		CGO_ENABLED=1 GOFLAGS=-buildvcs=false go build -trimpath -tags "$GO_BUILDTAGS" -o "$out.tmp" \
			-ldflags "-w -X $v.Version=$version -X $v.GitCommit=$commit -X $v.BuildTime=$BUILDTIME -extldflags -static" \
			"$pkg"
	)
	mv "$out.tmp" "$out"
}

build_stock() {
	"$AB_ROOT/hack/stack/upstream.sh"
	log "build: dockerd-stock $UPSTREAM_VERSION"
	go_build "$STOCK_TREE" "$BIN/dockerd-stock" ./cmd/dockerd "$UPSTREAM_VERSION" "${UPSTREAM_COMMIT:0:7}"
	log "build: docker-proxy"
	go_build "$STOCK_TREE" "$BIN/docker-proxy" ./cmd/docker-proxy "$UPSTREAM_VERSION" "${UPSTREAM_COMMIT:0:7}"
}

build_patched() {
	"$AB_ROOT/hack/stack/patches.sh" ensure
	local hash
	hash=$("$AB_ROOT/hack/stack/patches.sh" hash)
	log "build: dockerd-patched $UPSTREAM_VERSION+ab.$hash"
	go_build "$PATCHED_TREE" "$BIN/dockerd-patched" ./cmd/dockerd "$UPSTREAM_VERSION+ab.$hash" "${UPSTREAM_COMMIT:0:7}+ab.$hash"
}

mkdir -p "$BIN"
case "${1:-all}" in
stock) build_stock ;;
patched) build_patched ;;
all)
	build_stock
	build_patched
	;;
*) die "build: unknown target '$1' (want stock, patched or all)" ;;
esac
