#!/usr/bin/env bash
# Go fuzz tests of the parsers of outside input (daemon options, state files,
# HTTP headers, indexes on a device), each run for a bounded time in the
# patched tree. Their seed corpora (f.Add, testdata/fuzz/) also run as plain
# tests in hack/stack/test-unit.sh; this runs the fuzzing engine on top.
#
# usage: hack/stack/test-fuzz.sh [--list]
#
# Targets: hack/stack/fuzz-targets, one "package FuzzName inputs" a line, each
# fuzzed for its count of inputs (FUZZTIME overrides every count; go_fuzz in
# hack/lib.sh).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

targets() { grep -v -e '^#' -e '^[[:space:]]*$' "$AB_ROOT/hack/stack/fuzz-targets"; }

if [ "${1:-}" = --list ]; then
	targets
	exit 0
fi
"$AB_ROOT/hack/stack/patches.sh" ensure
tmp=$(mktemp -d "${TMPDIR:-/tmp}/moby-ab-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp
cd "$PATCHED_TREE"
n=0 failed=()
while read -r pkg name execs; do
	[ -d "$pkg" ] || die "fuzz: $pkg (hack/stack/fuzz-targets) is not in the patched tree"
	[[ ${execs:-} =~ ^[1-9][0-9]*$ ]] || die "fuzz: $pkg $name (hack/stack/fuzz-targets) has no count of inputs"
	n=$((n + 1))
	# One target at a time: -fuzz takes a single target per package run. A
	# failing input is written under the package's testdata/fuzz/, where
	# `go test -run $name/<file>` replays it.
	if ! go_fuzz "$execs" "$pkg" "$name" -tags "$GO_BUILDTAGS"; then
		failed+=("$pkg $name")
	fi
done < <(targets)
if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
fi
echo "fuzz: $((n - ${#failed[@]})) passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
