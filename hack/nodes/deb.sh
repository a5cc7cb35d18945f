#!/usr/bin/env bash
# Debian packages for test nodes, built with debhelper from a source tree staged
# per package (hack/nodes/deb/rules: dh installs the files, writes the
# maintainer scripts' systemd parts, conffiles, md5sums and shared-library
# Depends), reproducibly (the same inputs give the same bytes:
# SOURCE_DATE_EPOCH is the upstream tag's time from hack/upstream.pin, and the
# changelog's date; dh_builddeb clamps mtimes and owns files by root):
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
TOOLS=(dpkg-buildpackage dh jq)
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

# A source tree for one binary package: debian/ with the rules, compat 13 and
# the package's own files (named debian/<package>.<what>, as dh looks them up);
# the package's files to install beside it. Prints its path.
new_source() { # package
	local src=$STAGE/src-$1
	rm -rf "$src"
	install -d -m 0755 "$src/debian/source"
	install -m 0755 "$SRC/rules" "$src/debian/rules"
	echo "1.0" >"$src/debian/source/format"
	echo "$src"
}

changelog() { # src package version text...
	local src=$1 pkg=$2 version=$3
	shift 3
	{
		echo "$pkg ($version) $DISTRIBUTION; urgency=medium"
		echo
		local e
		for e in "$@"; do
			fold -s -w 72 <<<"$e" | sed -e '1s/^/  * /' -e '2,$s/^/    /' -e 's/[[:space:]]*$//'
		done
		echo
		echo " -- $MAINTAINER  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
	} >"$src/debian/changelog"
}

# dpkg-buildpackage: the binary package only, unsigned; its .deb goes to OUT.
build_package() { # src package version
	local src=$1 pkg=$2 version=$3 out log=$STAGE/$2.build.log
	out=$OUT/${pkg}_${version}_amd64.deb
	if ! (cd "$src" && DEB_XZ_LEVEL=$XZ_LEVEL dpkg-buildpackage --build=binary --no-sign >"$log" 2>&1); then
		tail -n 30 "$log" >&2
		die "deb: dpkg-buildpackage failed for $pkg (its log above)"
	fi
	mv "$STAGE/${pkg}_${version}_amd64.deb" "$out.tmp"
	mv "$out.tmp" "$out"
	rm -f "$STAGE/${pkg}_${version}"_amd64.{buildinfo,changes}
	log "deb: $out ($(du -h "$out" | cut -f1))"
	echo "$out"
}

build_dockerd() { # patched|stock
	local flavor=$1 bin version upstream src description config hash series_hash
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

	src=$(new_source "dockerd-$flavor")
	install -d -m 0755 "$src/bin" "$src/monitoring"
	install -m 0755 "$bin" "$src/bin/dockerd"
	install -m 0755 "$AB_ROOT/bin/docker-proxy" "$src/bin/docker-proxy"
	install -m 0755 "$SRC/moby-ab-bridge" "$SRC/moby-ab-switch" "$src/"
	series_options >"$src/series-options"
	install -m 0644 "$SRC/moby-ab-docker.service" "$SRC/moby-ab-docker.socket" "$SRC/moby-ab-switch.8" "$src/"
	install -m 0644 "$config" "$src/daemon.json"
	install -m 0644 "$SRC/monitoring/moby-ab-dashboard.json" "$SRC/monitoring/moby-ab-alerts.yml" "$src/monitoring/"
	local d=$src/debian/moby-ab-dockerd
	install -m 0644 "$SRC/dockerd.copyright" "$src/debian/copyright"
	install -m 0644 "$SRC/README.Debian" "$src/debian/README.Debian"
	install -m 0644 "$SRC/dockerd.lintian-overrides" "$d.lintian-overrides"
	install -m 0755 "$SRC/dockerd.postinst" "$d.postinst"
	install -m 0755 "$SRC/dockerd.prerm" "$d.prerm"
	install -m 0755 "$SRC/dockerd.postrm" "$d.postrm"
	cat >"$d.install" <<-EOF
		bin/dockerd $LIB/bin
		bin/docker-proxy $LIB/bin
		moby-ab-bridge $LIB
		series-options $LIB
		moby-ab-switch usr/sbin
		moby-ab-docker.service lib/systemd/system
		moby-ab-docker.socket lib/systemd/system
		daemon.json etc/moby-ab
		monitoring/moby-ab-dashboard.json usr/share/moby-ab/monitoring
		monitoring/moby-ab-alerts.yml usr/share/moby-ab/monitoring
	EOF
	echo moby-ab-switch.8 >"$d.manpages"
	echo "usr/bin/tini-static $LIB/bin/docker-init" >"$d.links"
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
	changelog "$src" moby-ab-dockerd "$version" "${entries[@]}"

	cat >"$src/debian/control" <<-EOF
		Source: moby-ab-dockerd
		Section: admin
		Priority: optional
		Maintainer: $MAINTAINER
		Build-Depends: debhelper-compat (= 13)
		Rules-Requires-Root: no
		Standards-Version: 4.6.2
		Homepage: https://github.com/moby/moby

		Package: moby-ab-dockerd
		Architecture: amd64
		Pre-Depends: \${misc:Pre-Depends}
		Depends: \${misc:Depends}, moby-ab-runtime (>= $RUNTIME_VERSION), tini (>= 0.19.0), iproute2, passwd
		Suggests: docker-ce-cli
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
	build_package "$src" moby-ab-dockerd "$version"
}

build_runtime() {
	local src version b
	runtime_versions
	version=$RUNTIME_VERSION-$REVISION
	src=$(new_source runtime)
	install -d -m 0755 "$src/bin"
	for b in containerd containerd-shim-runc-v2 runc criu; do
		install -m 0755 "$AB_PREFIX/bin/$b" "$src/bin/$b"
		echo "bin/$b $LIB/bin"
	done >"$src/debian/moby-ab-runtime.install"
	install -m 0644 "$SRC/runtime.copyright" "$src/debian/copyright"
	install -m 0644 "$SRC/runtime.lintian-overrides" "$src/debian/moby-ab-runtime.lintian-overrides"
	changelog "$src" moby-ab-runtime "$version" \
		"containerd v$CONTAINERD_V with containerd-shim-runc-v2, runc $RUNC_V (seccomp), CRIU $CRIU_V, as hack/stack/install-deps.sh builds them for Docker Engine $UPSTREAM_VERSION."
	# shlibs:Depends: the shared libraries they need, as dh_shlibdeps finds
	# them on this system; and what CRIU runs to dump a container's network
	# namespace: ip, and iptables-restore to lock its network while it dumps.
	cat >"$src/debian/control" <<-EOF
		Source: moby-ab-runtime
		Section: admin
		Priority: optional
		Maintainer: $MAINTAINER
		Build-Depends: debhelper-compat (= 13)
		Rules-Requires-Root: no
		Standards-Version: 4.6.2
		Homepage: https://github.com/containerd/containerd

		Package: moby-ab-runtime
		Architecture: amd64
		Depends: \${shlibs:Depends}, \${misc:Depends}, iproute2, iptables
		Description: containerd, runc and CRIU pinned for moby-ab's Docker Engine
		 containerd v$CONTAINERD_V and its runc shim, runc $RUNC_V and CRIU $CRIU_V, in
		 /usr/lib/moby-ab/bin, where moby-ab-dockerd's dockerd finds them; Debian's
		 containerd, runc and criu packages are not touched. CRIU $CRIU_V checkpoints
		 processes with TCP sockets on Linux 6.16 and later, which Debian's CRIU
		 cannot.
	EOF
	build_package "$src" moby-ab-runtime "$version"
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
