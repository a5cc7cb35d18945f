#!/usr/bin/env bash
# Debian packages for test nodes, built with plain dpkg-deb, reproducibly (the
# same inputs give the same bytes: SOURCE_DATE_EPOCH is the upstream tag's time
# from hack/upstream.pin, files are root-owned with fixed modes and mtimes,
# dpkg-deb sorts the members):
#
#   moby-ab-dockerd_<upstream>+ab.<series hash>-<rev>   bin/dockerd-patched
#   moby-ab-dockerd_<upstream>-<rev>                    bin/dockerd-stock (lower: a downgrade)
#       dockerd, docker-proxy and docker-init (Debian's tini-static) in
#       /usr/lib/moby-ab/bin, moby-ab-docker.service and .socket (a daemon
#       beside the system Docker), /etc/moby-ab/daemon.json, moby-ab-switch
#       (docker.service runs this dockerd instead of the system's, and back)
#   moby-ab-runtime_<containerd>+runc.<v>+criu.<v>-<rev>
#       containerd, containerd-shim-runc-v2, runc and CRIU from $AB_PREFIX/bin
#       (hack/stack/install-deps.sh) in /usr/lib/moby-ab/bin
#
# usage: hack/nodes/deb.sh [--out DIR] [--revision N] [--lintian] [patched|stock|runtime ...]
#   default: all three into build/deb, revision 1. --lintian: fail if lintian
#   reports an error in the packages built. DEB_XZ_LEVEL (default 6) sets the
#   compression level; it changes the bytes, not the contents.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

SRC=$AB_ROOT/hack/nodes/deb
LIB=usr/lib/moby-ab
MAINTAINER=${DEB_MAINTAINER:-moby-ab <dev@moby-ab.invalid>}
DISTRIBUTION=bookworm
XZ_LEVEL=${DEB_XZ_LEVEL:-6}
# The series' daemon options (hack/nodes/deb/series-options), as a JSON list: the
# stock package's daemon.json is the patched one without them.
series_options() { grep -v -e '^#' -e '^$' "$SRC/series-options"; }

SOURCE_DATE_EPOCH=$(date -u -d "$UPSTREAM_TIME" +%s)
export SOURCE_DATE_EPOCH LC_ALL=C TZ=UTC
umask 022

OUT=$AB_BUILD/deb
REVISION=1
LINTIAN=0
WHAT=()
while [ $# -gt 0 ]; do
	case $1 in
	--out) OUT=${2:?--out needs a directory}; shift 2 ;;
	--revision) REVISION=${2:?--revision needs a number}; shift 2 ;;
	--lintian) LINTIAN=1; shift ;;
	patched | stock | runtime) WHAT+=("$1"); shift ;;
	*) die "usage: hack/nodes/deb.sh [--out DIR] [--revision N] [--lintian] [patched|stock|runtime ...]" ;;
	esac
done
[ ${#WHAT[@]} -gt 0 ] || WHAT=(patched stock runtime)
[[ $REVISION =~ ^[0-9][0-9A-Za-z.+~]*$ ]] || die "deb: bad revision '$REVISION'"
TOOLS=(dpkg-deb dpkg-shlibdeps jq)
[ "$LINTIAN" = 0 ] || TOOLS+=(lintian)
for tool in "${TOOLS[@]}"; do
	command -v "$tool" >/dev/null || die "deb: $tool is missing (hack/stack/install-deps.sh installs it)"
done

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT

# The version a dockerd binary reports ("Docker version 29.8.1+ab.<hash>, build ...").
dockerd_version() {
	"$1" --version | sed -n 's/^Docker version \([^,]*\),.*/\1/p'
}

# The versions of the runtime binaries, checked to be what the daemon needs.
runtime_versions() { # sets CONTAINERD_V RUNC_V CRIU_V
	local b
	for b in containerd containerd-shim-runc-v2 runc criu; do
		[ -x "$AB_PREFIX/bin/$b" ] || die "deb: $AB_PREFIX/bin/$b is missing: run make deps"
	done
	CONTAINERD_V=$("$AB_PREFIX/bin/containerd" --version | awk '{print $3}')
	CONTAINERD_V=${CONTAINERD_V#v}
	RUNC_V=$("$AB_PREFIX/bin/runc" --version | awk 'NR == 1 {print $3}')
	CRIU_V=$("$AB_PREFIX/bin/criu" --version | awk '/^Version:/ {print $2}')
	if [ -z "$CONTAINERD_V" ] || [ -z "$RUNC_V" ] || [ -z "$CRIU_V" ]; then
		die "deb: cannot read the versions of the runtime in $AB_PREFIX/bin"
	fi
	RUNTIME_VERSION=$CONTAINERD_V+runc.$RUNC_V+criu.$CRIU_V
}

# The digest hack/stack/patches.sh gives a series: patches/ as it is now.
patches_dir_hash() {
	local p
	{
		cat "$AB_ROOT/patches/series"
		grep -v -e '^#' -e '^[[:space:]]*$' "$AB_ROOT/patches/series" | while read -r p; do cat "$AB_ROOT/patches/$p"; done
	} | sha256sum | cut -c1-10
}

patch_subject() { # file: its Subject, unfolded, without "[PATCH]"
	awk '/^Subject: / {s = $0; while ((getline l) > 0 && l ~ /^[ \t]/) s = s l; sub(/^Subject: (\[PATCH[^]]*\] )?/, "", s); print s; exit}' "$1"
}

new_root() { # name: an empty package tree; prints its path
	local root=$STAGE/$1
	rm -rf "$root"
	install -d -m 0755 "$root" "$root/DEBIAN"
	echo "$root"
}

changelog() { # root package version text...
	local root=$1 pkg=$2 version=$3 doc
	shift 3
	doc=$root/usr/share/doc/$pkg
	install -d -m 0755 "$doc"
	{
		echo "$pkg ($version) $DISTRIBUTION; urgency=medium"
		echo
		local e
		for e in "$@"; do
			fold -s -w 72 <<<"$e" | sed -e '1s/^/  * /' -e '2,$s/^/    /' -e 's/[[:space:]]*$//'
		done
		echo
		echo " -- $MAINTAINER  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
	} | gzip -9n >"$doc/changelog.Debian.gz"
}

# Installed-Size as dpkg-gencontrol counts it: KiB per file, rounded up, and one
# per directory or link.
installed_size() {
	find "$1" -path "$1/DEBIAN" -prune -o -mindepth 1 -printf '%y %s\n' |
		awk '$1 == "f" {n += int(($2 + 1023) / 1024); next} {n += 1} END {print n}'
}

# Control files, md5sums, fixed modes and mtimes; then dpkg-deb.
finish() { # root package version
	local root=$1 pkg=$2 version=$3 out
	(
		cd "$root"
		find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | sort |
			grep -v -x -F -f <(sed 's|^/||' DEBIAN/conffiles 2>/dev/null || true) |
			xargs -r -d '\n' md5sum >DEBIAN/md5sums
	)
	chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/control"
	[ ! -f "$root/DEBIAN/conffiles" ] || chmod 0644 "$root/DEBIAN/conffiles"
	find "$root" -type d -exec chmod 0755 {} +
	find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	out=$OUT/${pkg}_${version}_amd64.deb
	dpkg-deb --root-owner-group -Zxz -z"$XZ_LEVEL" --build "$root" "$out.tmp" >/dev/null
	mv "$out.tmp" "$out"
	log "deb: $out ($(du -h "$out" | cut -f1))"
	echo "$out"
}

build_dockerd() { # patched|stock
	local flavor=$1 bin version upstream root description config hash series_hash
	bin=$AB_ROOT/bin/dockerd-$flavor
	[ -x "$bin" ] || die "deb: $bin is missing: run make build"
	[ -x "$AB_ROOT/bin/docker-proxy" ] || die "deb: $AB_ROOT/bin/docker-proxy is missing: run make build"
	upstream=$(dockerd_version "$bin")
	case $flavor in
	patched)
		[[ $upstream == "$UPSTREAM_VERSION+ab."* ]] ||
			die "deb: $bin reports '$upstream', not $UPSTREAM_VERSION+ab.<series hash>: run make build"
		hash=${upstream#"$UPSTREAM_VERSION+ab."}
		series_hash=$(patches_dir_hash)
		[ "$hash" = "$series_hash" ] ||
			warn "deb: $bin was built from series $hash, patches/ is $series_hash (make build; make patches-export first if build/moby-patched has commits not in patches/)"
		config=$SRC/daemon.json
		description="Docker Engine $UPSTREAM_VERSION with the moby-ab patches"
		;;
	stock)
		[ "$upstream" = "$UPSTREAM_VERSION" ] || die "deb: $bin reports '$upstream', not $UPSTREAM_VERSION: run make build"
		config=$SRC/daemon.stock.json
		description="Docker Engine $UPSTREAM_VERSION as released (moby-ab build)"
		;;
	esac
	version=$upstream-$REVISION
	runtime_versions

	# The stock daemon.json is the patched one without the series' options.
	[ "$(jq -S --argjson k "$(series_options | jq -R . | jq -sc .)" 'with_entries(select(.key as $x | $k | index($x) | not))' "$SRC/daemon.json")" = \
		"$(jq -S . "$SRC/daemon.stock.json")" ] ||
		die "deb: hack/nodes/deb/daemon.stock.json must be hack/nodes/deb/daemon.json without the series' options"

	root=$(new_root "dockerd-$flavor")
	install -d -m 0755 "$root/$LIB/bin" "$root/usr/sbin" "$root/lib/systemd/system" "$root/etc/moby-ab" \
		"$root/usr/share/man/man8" "$root/usr/share/lintian/overrides" "$root/usr/share/doc/moby-ab-dockerd"
	install -m 0755 "$bin" "$root/$LIB/bin/dockerd"
	install -m 0755 "$AB_ROOT/bin/docker-proxy" "$root/$LIB/bin/docker-proxy"
	ln -s ../../../bin/tini-static "$root/$LIB/bin/docker-init"
	install -m 0755 "$SRC/moby-ab-bridge" "$root/$LIB/moby-ab-bridge"
	install -m 0755 "$SRC/moby-ab-switch" "$root/usr/sbin/moby-ab-switch"
	series_options >"$root/$LIB/series-options"
	chmod 0644 "$root/$LIB/series-options"
	install -m 0644 "$SRC/moby-ab-docker.service" "$SRC/moby-ab-docker.socket" "$root/lib/systemd/system/"
	install -m 0644 "$config" "$root/etc/moby-ab/daemon.json"
	gzip -9n <"$SRC/moby-ab-switch.8" >"$root/usr/share/man/man8/moby-ab-switch.8.gz"
	install -m 0644 "$SRC/dockerd.copyright" "$root/usr/share/doc/moby-ab-dockerd/copyright"
	install -m 0644 "$SRC/README.Debian" "$root/usr/share/doc/moby-ab-dockerd/README.Debian"
	install -m 0644 "$SRC/dockerd.lintian-overrides" "$root/usr/share/lintian/overrides/moby-ab-dockerd"
	install -d -m 0755 "$root/usr/share/moby-ab/monitoring"
	install -m 0644 "$SRC/monitoring/moby-ab-dashboard.json" "$SRC/monitoring/moby-ab-alerts.yml" \
		"$root/usr/share/moby-ab/monitoring/"
	local entries=("Docker Engine $UPSTREAM_VERSION, upstream commit ${UPSTREAM_COMMIT:0:12} (Go module $UPSTREAM_MODULE@$UPSTREAM_MODULE_VERSION).")
	if [ "$flavor" = patched ]; then
		entries+=("dockerd with the moby-ab patch series $hash.")
		if [ "$hash" = "$series_hash" ]; then
			local p
			while read -r p; do
				entries+=("${p:0:4}: $(patch_subject "$AB_ROOT/patches/$p")")
			done < <(grep -v -e '^#' -e '^[[:space:]]*$' "$AB_ROOT/patches/series")
		fi
		entries+=("daemon.json turns on the checkpoint queue (2, smallest first) and adaptive per-registry layer downloads.")
	else
		entries+=("dockerd as released, for a downgrade from a patched build.")
	fi
	changelog "$root" moby-ab-dockerd "$version" "${entries[@]}"

	install -m 0755 "$SRC/dockerd.postinst" "$root/DEBIAN/postinst"
	install -m 0755 "$SRC/dockerd.prerm" "$root/DEBIAN/prerm"
	install -m 0755 "$SRC/dockerd.postrm" "$root/DEBIAN/postrm"
	echo /etc/moby-ab/daemon.json >"$root/DEBIAN/conffiles"
	cat >"$root/DEBIAN/control" <<-EOF
		Package: moby-ab-dockerd
		Version: $version
		Architecture: amd64
		Maintainer: $MAINTAINER
		Installed-Size: $(installed_size "$root")
		Pre-Depends: init-system-helpers (>= 1.54~)
		Depends: moby-ab-runtime (>= $RUNTIME_VERSION), tini (>= 0.19.0), iproute2, passwd
		Suggests: docker-ce-cli
		Section: admin
		Priority: optional
		Homepage: https://github.com/moby/moby
		Description: $description
		 The Docker Engine daemon (dockerd) with docker-proxy and docker-init, in
		 /usr/lib/moby-ab/bin beside any system Docker. It runs as its own service,
		 moby-ab-docker (socket /run/moby-ab-docker.sock, data in
		 /var/lib/moby-ab-docker, configuration in /etc/moby-ab/daemon.json, bridge
		 moby-ab0), or, after "moby-ab-switch system", as the system's
		 docker.service instead of its dockerd.
		 .
		 Versions with "+ab." carry moby-ab's patch series: checkpoints written
		 straight to disk and restored with their network, an optional checkpoint
		 queue and write-bandwidth cap, checkpoint images on zoned devices, and
		 layer downloads limited per registry, adaptively. A version without it is
		 the release as upstream tagged it.
	EOF
	finish "$root" moby-ab-dockerd "$version"
}

build_runtime() {
	local root version b deps
	runtime_versions
	version=$RUNTIME_VERSION-$REVISION
	root=$(new_root runtime)
	install -d -m 0755 "$root/$LIB/bin" "$root/usr/share/lintian/overrides" "$root/usr/share/doc/moby-ab-runtime"
	for b in containerd containerd-shim-runc-v2 runc criu; do
		install -m 0755 "$AB_PREFIX/bin/$b" "$root/$LIB/bin/$b"
	done
	install -m 0644 "$SRC/runtime.copyright" "$root/usr/share/doc/moby-ab-runtime/copyright"
	install -m 0644 "$SRC/runtime.lintian-overrides" "$root/usr/share/lintian/overrides/moby-ab-runtime"
	changelog "$root" moby-ab-runtime "$version" \
		"containerd v$CONTAINERD_V with containerd-shim-runc-v2, runc $RUNC_V (seccomp), CRIU $CRIU_V, as hack/stack/install-deps.sh builds them for Docker Engine $UPSTREAM_VERSION."
	# The shared libraries they need, as dpkg-shlibdeps finds them on this
	# system; and what CRIU runs to dump a container's network namespace: ip,
	# and iptables-restore to lock its network while it dumps.
	install -d "$STAGE/shlibs/debian"
	printf 'Source: moby-ab\n\nPackage: moby-ab-runtime\nArchitecture: amd64\n' >"$STAGE/shlibs/debian/control"
	rm -rf "$STAGE/shlibs/debian/moby-ab-runtime"
	cp -a "$root" "$STAGE/shlibs/debian/moby-ab-runtime"
	deps=$(cd "$STAGE/shlibs" && dpkg-shlibdeps -O debian/moby-ab-runtime/$LIB/bin/* 2>"$STAGE/shlibdeps.log" |
		sed -n 's/^shlibs:Depends=//p') || true
	[ -n "$deps" ] || { cat "$STAGE/shlibdeps.log" >&2; die "deb: dpkg-shlibdeps failed for the runtime"; }
	cat >"$root/DEBIAN/control" <<-EOF
		Package: moby-ab-runtime
		Version: $version
		Architecture: amd64
		Maintainer: $MAINTAINER
		Installed-Size: $(installed_size "$root")
		Depends: $deps, iproute2, iptables
		Section: admin
		Priority: optional
		Homepage: https://github.com/containerd/containerd
		Description: containerd, runc and CRIU pinned for moby-ab's Docker Engine
		 containerd v$CONTAINERD_V and its runc shim, runc $RUNC_V and CRIU $CRIU_V, in
		 /usr/lib/moby-ab/bin, where moby-ab-dockerd's dockerd finds them; Debian's
		 containerd, runc and criu packages are not touched. CRIU $CRIU_V checkpoints
		 processes with TCP sockets on Linux 6.16 and later, which Debian's CRIU
		 cannot.
	EOF
	finish "$root" moby-ab-runtime "$version"
}

mkdir -p "$OUT"
BUILT=()
for w in "${WHAT[@]}"; do
	case $w in
	patched | stock) BUILT+=("$(build_dockerd "$w")") ;;
	runtime) BUILT+=("$(build_runtime)") ;;
	esac
done
printf '%s\n' "${BUILT[@]}"
if [ "$LINTIAN" = 1 ]; then
	log "deb: lintian ${BUILT[*]##*/}"
	# Errors fail the build; warnings are listed. Overridden tags (each with
	# its reason in hack/nodes/deb/*.lintian-overrides) are counted only:
	# --show-overrides would make them count as errors for --fail-on.
	rc=0
	lintian --fail-on error --tag-display-limit 0 "${BUILT[@]}" >"$STAGE/lintian.txt" 2>&1 || rc=$?
	grep -v -e '^running with root privileges' -e '^I: .*: spelling-error-in-binary' "$STAGE/lintian.txt" >&2 || true
	[ "$rc" = 0 ] || die "deb: lintian reports errors"
	log "deb: lintian: no errors"
fi
