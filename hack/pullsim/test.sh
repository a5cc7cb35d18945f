#!/usr/bin/env bash
# The adaptive download limit against a network model (TCP over a bottleneck:
# the tuned links and the held-out ones). The model is the project's own tool,
# not part of the patch series: its files are added to the patched tree's
# pullconcurrency package for the run only, with `go test -overlay`, so that
# they test the controller's internals as the package's own tests do.
#
# usage: hack/pullsim/test.sh [go test flags...]   (-v prints every case)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

"$AB_ROOT/hack/stack/patches.sh" ensure
pkg=daemon/internal/distribution/pullconcurrency
here=$AB_ROOT/hack/pullsim
tmp=$(mktemp -d "${TMPDIR:-/tmp}/moby-ab-pullsim.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for f in sim_test.go simnet_test.go; do
	if [ -e "$PATCHED_TREE/$pkg/$f" ]; then
		echo "pullsim: $pkg/$f exists in the patched tree; the model must not be part of the series" >&2
		exit 1
	fi
done
python3 - "$PATCHED_TREE/$pkg" "$here" >"$tmp/overlay.json" <<'PY'
import json, sys
pkg, here = sys.argv[1:]
print(json.dumps({"Replace": {f"{pkg}/{f}": f"{here}/{f}" for f in ("sim_test.go", "simnet_test.go")}}))
PY
log "pullsim: the adaptive limit against the network model"
cd "$PATCHED_TREE"
go test -overlay "$tmp/overlay.json" -tags "$GO_BUILDTAGS" -count=1 -run '^TestSim' "$@" "./$pkg"
