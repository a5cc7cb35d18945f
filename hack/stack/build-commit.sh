#!/usr/bin/env bash
# Build the patched dockerd of a commit of this project into
# bin/dockerd-commit-<its first 12 hex digits>, so that a suite can run two
# commits of the series in turns (a flavor's binary = "commit:<rev>",
# hack/ab/systems/dockerd.py). The commit's tree is exported (git archive)
# into a directory of its own under build/commits/ and built there by its
# own hack/stack/build.sh patched, with a build directory of its own (the
# commit may pin another upstream; this tree's build/ is not touched), then
# removed. A binary already there is kept: the build is reproducible, and
# its version names the commit's series.
#
# usage: hack/stack/build-commit.sh REV
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

rev=${1:?usage: hack/stack/build-commit.sh REV}
sha=$(abgit -C "$AB_ROOT" rev-parse --verify --quiet "$rev^{commit}") ||
	die "build-commit: no commit '$rev' in $AB_ROOT"
short=${sha:0:12}
out=$AB_ROOT/bin/dockerd-commit-$short
if [ -x "$out" ]; then
	log "build-commit: $out is there ($("$out" --version))"
	exit 0
fi
abgit -C "$AB_ROOT" cat-file -e "$sha:hack/stack/build.sh" 2>/dev/null ||
	die "build-commit: commit $short has no hack/stack/build.sh to build it with"
work=$AB_BUILD/commits/$short
rm -rf "$work"
mkdir -p "$work/src"
trap 'rm -rf "$work"' EXIT
log "build-commit: $short ($(abgit -C "$AB_ROOT" log -1 --format=%s "$sha"))"
abgit -C "$AB_ROOT" archive "$sha" | tar -x -C "$work/src"
# its own scripts, paths and build directory, not this tree's
env -u AB_ROOT -u PATCHED_TREE AB_BUILD="$work/build" "$work/src/hack/stack/build.sh" patched
mkdir -p "$AB_ROOT/bin"
cp "$work/src/bin/dockerd-patched" "$out.tmp"
mv "$out.tmp" "$out"
log "build-commit: $out ($("$out" --version))"
