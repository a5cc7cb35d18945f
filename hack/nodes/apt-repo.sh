#!/usr/bin/env bash
# The packages of hack/nodes/deb.sh as a signed apt repository (reprepro), for
# test nodes to install, upgrade and roll back with plain apt-get:
#
#   deb [signed-by=/usr/share/keyrings/moby-ab-archive-keyring.gpg] URL bookworm main stock
#
# Component main holds the patched daemon and the runtime; component stock
# the stock daemon (the same package, a lower version), which is what a node
# rolls back to: apt-get install --allow-downgrades moby-ab-dockerd=<upstream>-1.
# reprepro keeps one version of a package per component: adding a newer
# patched package to main replaces the one before.
#
# usage: hack/nodes/apt-repo.sh add DIR [DEB ...]   the packages into the repository
#                                                   DIR (made if missing), signed;
#                                                   default: build/deb/*.deb
#        hack/nodes/apt-repo.sh key DIR             the public keyring's path
#        hack/nodes/apt-repo.sh stop DIR            end the signing key's gpg-agent
#
# The repository is signed with the key APT_REPO_KEY (a fingerprint) of the
# keyring GNUPGHOME, when both are set: an operator's own key. Otherwise with a
# test key made on first use in DIR/.signing (no passphrase; not for a
# repository anyone outside a test trusts), whose agent `stop` ends. The
# public keyring is DIR/moby-ab-archive-keyring.gpg either way.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CODENAME=bookworm
KEYRING=moby-ab-archive-keyring.gpg

need() { command -v "$1" >/dev/null || die "apt-repo: $1 is missing (hack/stack/install-deps.sh installs it)"; }

# signing_key: the key's fingerprint, made in GNUPGHOME (the repository's
# .signing, which the caller exports) unless APT_REPO_KEY names one.
signing_key() {
	local fpr
	if [ -n "${APT_REPO_KEY:-}" ]; then
		[ -n "${GNUPGHOME:-}" ] || die "apt-repo: APT_REPO_KEY is set but GNUPGHOME is not"
		gpg --batch --list-secret-keys "$APT_REPO_KEY" >/dev/null 2>&1 ||
			die "apt-repo: no secret key $APT_REPO_KEY in $GNUPGHOME"
		echo "$APT_REPO_KEY"
		return
	fi
	if [ ! -d "$GNUPGHOME" ]; then
		mkdir -m 0700 "$GNUPGHOME"
		gpg --batch --quiet --passphrase '' --quick-gen-key \
			'moby-ab test repository <moby-ab@localhost>' ed25519 sign never 2>/dev/null ||
			die "apt-repo: making the test key in $GNUPGHOME failed"
	fi
	fpr=$(gpg --batch --with-colons --list-secret-keys 2>/dev/null | awk -F: '$1 == "fpr" { print $10; exit }')
	[ -n "$fpr" ] || die "apt-repo: no secret key in $GNUPGHOME"
	echo "$fpr"
}

# component DEB: main or stock, from the package's name and version.
component() {
	local name version
	name=$(dpkg-deb -f "$1" Package)
	version=$(dpkg-deb -f "$1" Version)
	case $name:$version in
	moby-ab-dockerd:*+ab.*) echo main ;;
	moby-ab-dockerd:*) echo stock ;;
	moby-ab-*) echo main ;;
	*) die "apt-repo: $1 is not a package of hack/nodes/deb.sh ($name)" ;;
	esac
}

cmd_add() {
	local dir=${1:?usage: hack/nodes/apt-repo.sh add DIR [DEB ...]} fpr deb
	shift
	need reprepro
	need gpg
	local debs=("$@")
	[ ${#debs[@]} -gt 0 ] || debs=("$AB_ROOT"/build/deb/*.deb)
	for deb in "${debs[@]}"; do
		[ -f "$deb" ] || die "apt-repo: no package $deb (make deb builds them)"
	done
	mkdir -p "$dir/conf"
	[ -n "${APT_REPO_KEY:-}" ] || export GNUPGHOME=$dir/.signing
	fpr=$(signing_key)
	cat >"$dir/conf/distributions" <<-EOF
		Origin: moby-ab
		Label: moby-ab
		Codename: $CODENAME
		Architectures: amd64
		Components: main stock
		Description: moby-ab: the patched Docker Engine and its runtime, and the stock daemon to roll back to
		SignWith: $fpr
	EOF
	for deb in "${debs[@]}"; do
		reprepro -b "$dir" -C "$(component "$deb")" includedeb "$CODENAME" "$deb" >/dev/null ||
			die "apt-repo: reprepro could not add $deb"
	done
	gpg --batch --export "$fpr" >"$dir/$KEYRING"
	# The Release file is what apt checks: it must verify with the keyring.
	gpgv --keyring "$dir/$KEYRING" "$dir/dists/$CODENAME/InRelease" 2>/dev/null ||
		die "apt-repo: dists/$CODENAME/InRelease does not verify with $dir/$KEYRING"
	echo "$dir"
}

cmd_stop() {
	local dir=${1:?usage: hack/nodes/apt-repo.sh stop DIR}
	[ -d "$dir/.signing" ] || return 0
	gpgconf --homedir "$dir/.signing" --kill gpg-agent 2>/dev/null || true
}

case ${1:-} in
add)
	shift
	cmd_add "$@"
	;;
key)
	d=${2:?usage: hack/nodes/apt-repo.sh key DIR}
	[ -f "$d/$KEYRING" ] || die "apt-repo: $d is not a repository of apt-repo.sh (no $KEYRING)"
	echo "$d/$KEYRING"
	;;
stop) cmd_stop "${2:-}" ;;
*) die "usage: hack/nodes/apt-repo.sh add DIR [DEB ...] | key DIR | stop DIR" ;;
esac
