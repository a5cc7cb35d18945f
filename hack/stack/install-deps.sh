#!/usr/bin/env bash
# Install the pinned runtime stack, idempotently: what is already right is kept.
#
# Debian packages come from apt; containerd, runc and CRIU are built from source
# (Go module proxy; Debian's source tarball for CRIU) into $AB_PREFIX/bin, never
# over a system Docker or containerd.
#
# usage: hack/stack/install-deps.sh [--check]
#        hack/stack/install-deps.sh --print-run-packages
#            the Debian packages that running the suites needs (not building):
#            what a machine given hack/nodes/bundle.sh's harness installs
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CONTAINERD_VERSION=v2.3.3
RUNC_VERSION=v1.4.3
# CRIU 4.2.1, not 4.1.1: since Linux 6.16 getsockopt(SO_PASSCRED) fails on inet
# sockets and CRIU 4.1.1 then cannot dump any container with a TCP socket (a
# server); 4.2 asks only unix and netlink sockets. Debian's 3.17 cannot run on
# these kernels at all (vdso).
CRIU_VERSION=${CRIU_VERSION:-4.2.1}
# Debian suites whose source index may list the tarball, tried in order.
CRIU_SUITES=${CRIU_SUITES:-sid forky trixie}
TINI_VERSION=0.19.0
# Debian 12's podman (APT_PACKAGES): the podman test host is written for it
PODMAN_SERIES=4.3
# Debian 12's charliecloud (APT_PACKAGES: its runtime, ch-run)
CHARLIECLOUD_SERIES=0.31
MIN_DOCKER_API=1.44
# golangci-lint for `make patches-lint`: the version upstream's Dockerfile pins
# (ARG GOLANGCI_LINT_VERSION) for the tree's .golangci.yml (format "2": a v2
# golangci-lint), built from its module as that Dockerfile builds it.
GOLANGCI_LINT_VERSION=v2.8.0
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
AB_CACHE=${AB_CACHE:-/var/cache/moby-ab}
BIN=$AB_PREFIX/bin

APT_PACKAGES=(
	# build and scripts
	gcc make git curl ca-certificates xz-utils jq gpgv pkg-config libseccomp-dev
	# test hosts
	iproute2 nftables iptables kmod util-linux bsdextrautils procps psmisc e2fsprogs
	# test images and servers
	busybox-static tini docker-registry debootstrap
	# suites
	bats bats-support bats-assert hyperfine wrk fio shellcheck
	# the node test image copies the host's Node.js (any build will do)
	nodejs
	python3 python3-matplotlib python3-numpy python3-scipy
	# CRIU's build
	libprotobuf-c-dev libnl-3-dev libnet1-dev libcap-dev libbsd-dev protobuf-c-compiler
	protobuf-compiler libprotobuf-dev python3-protobuf libnftables-dev uuid-dev libgnutls28-dev
	libaio-dev
	# the results' history page, tested rendered (hack/ab/tests/test_history.py)
	chromium
	# zoned-device tests (QEMU)
	qemu-system-x86
	# device-mapper faults under a checkpoint directory in the guest
	# (hack/zoned/zns-vm/docker-faults.sh): dmsetup, with its libdevmapper
	dmsetup
	# an NFS checkpoint root served and mounted inside the guest, and moved
	# between two daemons there (hack/zoned/zns-vm/docker-nfs.sh): the
	# server's rpc.nfsd, rpc.mountd and exportfs, and mount.nfs (nfs-common);
	# installed with the services kept from starting, as the others
	nfs-kernel-server
	# a checkpoint directory whose file system refuses RENAME_NOREPLACE, as
	# NFS does (bindfs, a FUSE file system: bats/checkpoint.bats, the
	# daemon's unit tests)
	bindfs
	# the alert rules and dashboard the package ships, checked with promtool and
	# run against a real Prometheus scraping a patched daemon (bats/monitoring.bats);
	# installed with the service kept from starting, as the others
	prometheus
	# Debian packages for test nodes (make deb) and their test in a debootstrap
	# root: debhelper (dpkg-buildpackage), lintian, systemd-analyze and systemd-socket-activate
	dpkg-dev debhelper lintian systemd
	# the signed apt repository test nodes install from (hack/nodes/apt-repo.sh)
	reprepro gnupg
	# the fleet playbooks (hack/nodes/ansible) and their test nodes (hack/nodes/nodes.sh)
	ansible-core openssh-client
	# a peer of the dockerd hosts in the pull suites (hack/hosts/podman-host.sh):
	# Debian's podman, run with the runtime stack's runc
	podman
	# seed 002's HPC runtime, a peer in the overhead suites
	# (hack/ab/systems/charliecloud.py): ch-run, Debian 12's charliecloud
	# 0.31. Its runtime package alone: the charliecloud metapackage also
	# depends on charliecloud-builders (ch-image, ch-convert), which pulls
	# docker.io, Debian's containerd, runc and CRIU 3.17 and buildah onto the
	# machine; the harness unpacks its images itself.
	charliecloud-runtime
)

# What running the suites needs, of APT_PACKAGES.
RUN_PACKAGES=(
	iproute2 nftables iptables kmod util-linux bsdextrautils procps psmisc jq curl make
	busybox-static tini docker-registry hyperfine wrk fio nodejs
	python3 python3-matplotlib python3-numpy python3-scipy
)

CHECK=0
[ "${1:-}" = --check ] && CHECK=1
if [ "${1:-}" = --print-run-packages ]; then
	echo "${RUN_PACKAGES[*]}"
	exit 0
fi
missing=0

step() { printf '==> %-28s %s\n' "$1" "$2" >&2; }
need() { # component: record or fail in --check mode
	step "$1" "missing or wrong version"
	missing=1
	[ "$CHECK" = 0 ]
}

install_apt() {
	local want=() p
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || want+=("$p")
	done
	if [ ${#want[@]} = 0 ]; then
		step "debian packages" "all ${#APT_PACKAGES[@]} installed"
		return
	fi
	need "debian packages (${want[*]})" || return 0
	export DEBIAN_FRONTEND=noninteractive
	# Keep package installs from starting services (docker-registry would).
	local policy=/usr/sbin/policy-rc.d had_policy=0
	[ -e "$policy" ] && had_policy=1
	if [ "$had_policy" = 0 ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod +x "$policy"
		trap 'rm -f /usr/sbin/policy-rc.d' EXIT
	fi
	if ! apt-get install -y --no-install-recommends "${want[@]}" >"$AB_CACHE/apt.log" 2>&1; then
		apt-get update >>"$AB_CACHE/apt.log" 2>&1 || die "apt-get update failed (log: $AB_CACHE/apt.log)"
		apt-get install -y --no-install-recommends "${want[@]}" >>"$AB_CACHE/apt.log" 2>&1 ||
			die "apt-get install failed (log: $AB_CACHE/apt.log)"
	fi
	if [ "$had_policy" = 0 ]; then
		rm -f "$policy"
		trap - EXIT
	fi
	step "debian packages" "installed ${#want[@]}"
}

go_install() { # out-name pkg@version tags ldflags
	local tmp
	tmp=$(mktemp -d)
	GOBIN=$tmp CGO_ENABLED=1 GOFLAGS=-buildvcs=false go install -tags "$3" -ldflags "$4" "$2" >&2 ||
		die "go install $2 failed"
	install -m 0755 "$tmp/$(basename "${2%@*}")" "$BIN/$1"
	rm -rf "$tmp"
}

install_containerd() {
	local v=${CONTAINERD_VERSION#v} m=github.com/containerd/containerd/v2
	if "$BIN/containerd" --version 2>/dev/null | grep -qw "$CONTAINERD_VERSION" &&
		[ -x "$BIN/containerd-shim-runc-v2" ]; then
		step "containerd $CONTAINERD_VERSION" "ok"
		return
	fi
	need "containerd $CONTAINERD_VERSION" || return 0
	local ld="-s -w -X $m/version.Version=$CONTAINERD_VERSION -X $m/version.Package=github.com/containerd/containerd/v2"
	go_install containerd "$m/cmd/containerd@$CONTAINERD_VERSION" "no_btrfs urfave_cli_no_docs" "$ld"
	go_install containerd-shim-runc-v2 "$m/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" "no_btrfs urfave_cli_no_docs" \
		"$ld -extldflags -static"
	step "containerd $CONTAINERD_VERSION" "installed ($v)"
}

# ctr of the same containerd: the harness drives containerd's own daemon
# with it, a peer of the dockerd hosts (hack/hosts/containerd-host.sh).
install_ctr() {
	local m=github.com/containerd/containerd/v2
	if "$BIN/ctr" --version 2>/dev/null | grep -qw "$CONTAINERD_VERSION"; then
		step "ctr $CONTAINERD_VERSION" "ok"
		return
	fi
	need "ctr $CONTAINERD_VERSION" || return 0
	go_install ctr "$m/cmd/ctr@$CONTAINERD_VERSION" "no_btrfs urfave_cli_no_docs" \
		"-s -w -X $m/version.Version=$CONTAINERD_VERSION -X $m/version.Package=github.com/containerd/containerd/v2"
	step "ctr $CONTAINERD_VERSION" "installed"
}

# (the checks read a version's whole output before grep -q: a program still
# writing when grep has its match dies of SIGPIPE, and under pipefail a good
# install would read as missing)
install_runc() {
	local out
	out=$("$BIN/runc" --version 2>/dev/null) || true
	if grep -q "^runc version ${RUNC_VERSION#v}\$" <<<"$out" && grep -q "^libseccomp:" <<<"$out"; then
		step "runc $RUNC_VERSION" "ok"
		return
	fi
	need "runc $RUNC_VERSION" || return 0
	go_install runc "github.com/opencontainers/runc@$RUNC_VERSION" "seccomp urfave_cli_no_docs" \
		"-X main.version=${RUNC_VERSION#v} -X main.gitCommit=$RUNC_VERSION"
	step "runc $RUNC_VERSION" "installed"
}

# CRIU from Debian's source tarball; its sha256 comes from a suite's Sources
# index, whose hash comes from the suite's InRelease, signed by Debian's archive
# key (checked with gpgv against debian-archive-keyring).
criu_tarball_sha256() { # suite dir tarball
	local suite=$1 dir=$2 tarball=$3 sources_sha
	curl -fsS -o "$dir/InRelease-$suite" "$DEBIAN_MIRROR/dists/$suite/InRelease" || return 1
	gpgv --keyring /usr/share/keyrings/debian-archive-keyring.gpg "$dir/InRelease-$suite" 2>/dev/null ||
		die "criu: $suite InRelease signature does not verify against Debian's archive keyring"
	sources_sha=$(awk '/^SHA256:/{s=1; next} /^[A-Za-z]/{s=0} s && $3 == "main/source/Sources.xz" {print $1}' "$dir/InRelease-$suite")
	[ -n "$sources_sha" ] || return 1
	if ! echo "$sources_sha  $dir/Sources-$suite.xz" | sha256sum -c --status 2>/dev/null; then
		curl -fsS -o "$dir/Sources-$suite.xz" "$DEBIAN_MIRROR/dists/$suite/main/source/Sources.xz" || return 1
		echo "$sources_sha  $dir/Sources-$suite.xz" | sha256sum -c --status ||
			die "criu: $suite Sources.xz does not match its InRelease"
	fi
	xz -dc "$dir/Sources-$suite.xz" | awk -v t="$tarball" '
		/^Package: /{pkg=$2} /^Checksums-Sha256:/{c=1; next} /^[A-Za-z]/{c=0}
		c && pkg == "criu" && $3 == t {print $1}' | head -n 1
}

install_criu() {
	local out
	out=$("$BIN/criu" --version 2>/dev/null) || true
	if grep -q "^Version: $CRIU_VERSION\$" <<<"$out"; then
		step "criu $CRIU_VERSION" "ok"
		return
	fi
	need "criu $CRIU_VERSION" || return 0
	local tarball=criu_$CRIU_VERSION.orig.tar.xz dir=$AB_CACHE/criu sha="" suite
	mkdir -p "$dir"
	for suite in $CRIU_SUITES; do
		sha=$(criu_tarball_sha256 "$suite" "$dir" "$tarball") || true
		[ -z "$sha" ] || break
	done
	[ -n "$sha" ] || die "criu: $tarball is not in the source index of any of: $CRIU_SUITES"
	if ! echo "$sha  $dir/$tarball" | sha256sum -c --status 2>/dev/null; then
		curl -fsS -o "$dir/$tarball" "$DEBIAN_MIRROR/pool/main/c/criu/$tarball" || die "criu: cannot fetch $tarball"
		echo "$sha  $dir/$tarball" | sha256sum -c --status || die "criu: $tarball checksum mismatch (want $sha)"
	fi
	step "criu $CRIU_VERSION" "tarball verified against $suite ($sha); building"
	rm -rf "$dir/src"
	mkdir -p "$dir/src"
	tar -C "$dir/src" --strip-components=1 -xJf "$dir/$tarball"
	make -C "$dir/src" -j"$(nproc)" criu >"$dir/build.log" 2>&1 || {
		tail -n 30 "$dir/build.log" >&2
		die "criu: build failed (log: $dir/build.log)"
	}
	install -m 0755 "$dir/src/criu/criu" "$BIN/criu"
	step "criu $CRIU_VERSION" "installed"
}

install_tini() {
	if "$BIN/docker-init" --version 2>/dev/null | grep -q "tini version $TINI_VERSION"; then
		step "docker-init (tini $TINI_VERSION)" "ok"
		return
	fi
	need "docker-init (tini $TINI_VERSION)" || return 0
	[ -x /usr/bin/tini-static ] || die "tini: /usr/bin/tini-static missing (Debian package tini)"
	install -m 0755 /usr/bin/tini-static "$BIN/docker-init"
	step "docker-init (tini $TINI_VERSION)" "installed"
}

check_podman() {
	local v
	v=$(dpkg-query -W -f='${Version}' podman 2>/dev/null || true)
	if [[ $v == "$PODMAN_SERIES".* ]]; then
		step "podman $PODMAN_SERIES" "ok ($v)"
		return
	fi
	need "podman $PODMAN_SERIES (Debian 12's; found ${v:-none})" || return 0
	warn "podman: hack/hosts/podman-host.sh is written for podman $PODMAN_SERIES; this machine has ${v:-none}"
}

check_charliecloud() {
	local v out
	v=$(dpkg-query -W -f='${Version}' charliecloud-runtime 2>/dev/null || true)
	# (ch-run refuses to start without $USER, and prints its version on stderr)
	out=$(USER=${USER:-root} ch-run --version 2>&1) || true
	if [[ $v == "$CHARLIECLOUD_SERIES"* ]] && [[ $out == "$CHARLIECLOUD_SERIES"* ]]; then
		step "charliecloud $CHARLIECLOUD_SERIES" "ok ($v, ch-run $out)"
		return
	fi
	need "charliecloud $CHARLIECLOUD_SERIES (Debian 12's charliecloud-runtime; found ${v:-none})" || return 0
	warn "charliecloud: hack/ab/systems/charliecloud.py is written for ch-run $CHARLIECLOUD_SERIES; this machine has ${v:-none}"
}

check_docker_cli() {
	local api
	api=$(docker version --format '{{.Client.APIVersion}}' 2>/dev/null || true)
	if [ -n "$api" ] && printf '%s\n%s\n' "$MIN_DOCKER_API" "$api" | sort -V -C; then
		step "docker CLI" "ok ($(command -v docker), API $api)"
		return
	fi
	need "docker CLI (API >= $MIN_DOCKER_API)" || return 0
	# Debian's docker.io client speaks API 1.41; build the CLI from its module.
	go_install docker "github.com/docker/cli/cmd/docker@v28.5.2+incompatible" "" "-X github.com/docker/cli/cli/version.Version=28.5.2"
	ln -sf "$BIN/docker" /usr/local/bin/docker
	step "docker CLI" "installed $BIN/docker"
}

install_golangci_lint() {
	local out m=github.com/golangci/golangci-lint/v2/cmd/golangci-lint tmp
	out=$("$BIN/golangci-lint" version 2>/dev/null) || true
	if grep -q "^golangci-lint has version ${GOLANGCI_LINT_VERSION#v} " <<<"$out" ||
		grep -q "^golangci-lint has version $GOLANGCI_LINT_VERSION " <<<"$out"; then
		step "golangci-lint $GOLANGCI_LINT_VERSION" "ok"
		return
	fi
	need "golangci-lint $GOLANGCI_LINT_VERSION" || return 0
	tmp=$(mktemp -d)
	GOBIN=$tmp CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install "$m@$GOLANGCI_LINT_VERSION" >&2 ||
		die "go install $m@$GOLANGCI_LINT_VERSION failed"
	install -m 0755 "$tmp/golangci-lint" "$BIN/golangci-lint"
	rm -rf "$tmp"
	step "golangci-lint $GOLANGCI_LINT_VERSION" "installed"
}

# The guest kernel of hack/zoned/zns-vm.sh (Debian's, from the package mirror).
install_zns_kernel() {
	local have
	if have=$(AB_CACHE=$AB_CACHE "$AB_ROOT/hack/zoned/zns-vm.sh" fetch --check 2>/dev/null); then
		step "zns guest kernel" "ok ($have)"
		return
	fi
	need "zns guest kernel" || return 0
	have=$(AB_CACHE=$AB_CACHE "$AB_ROOT/hack/zoned/zns-vm.sh" fetch) || die "zns guest kernel: fetch failed"
	step "zns guest kernel" "installed ($have)"
}

mkdir -p "$AB_CACHE"
[ "$CHECK" = 1 ] || mkdir -p "$BIN"
[ "$(id -u)" = 0 ] || die "hack/stack/install-deps.sh needs root"
install_apt
install_containerd
install_ctr
install_runc
install_criu
install_tini
check_podman
check_charliecloud
check_docker_cli
install_golangci_lint
install_zns_kernel

if [ "$CHECK" = 1 ]; then
	[ "$missing" = 0 ] || die "some components are missing: run hack/stack/install-deps.sh"
	exit 0
fi
{
	echo "containerd $("$BIN/containerd" --version | awk '{print $3}') $BIN/containerd"
	echo "ctr $("$BIN/ctr" --version | awk '{print $3}') $BIN/ctr"
	echo "runc $("$BIN/runc" --version | awk 'NR==1{print $3}') $BIN/runc"
	echo "criu $("$BIN/criu" --version | awk '/^Version/{print $2}') $BIN/criu"
	echo "docker-init $("$BIN/docker-init" --version | awk '{print $3}') $BIN/docker-init"
	echo "golangci-lint $("$BIN/golangci-lint" version | awk '{print $4}') $BIN/golangci-lint"
	echo "docker-registry $(docker-registry --version | awk '{print $3}') $(command -v docker-registry)"
	echo "docker $(docker version --format '{{.Client.Version}}' 2>/dev/null) $(command -v docker)"
	# (not podman --version: podman run bare creates the machine's default storage)
	echo "podman $(dpkg-query -W -f='${Version}' podman) $(command -v podman)"
	echo "ch-run $(USER=${USER:-root} ch-run --version 2>&1) $(command -v ch-run)"
} >"$AB_PREFIX/versions.txt"
column -t "$AB_PREFIX/versions.txt" >&2
