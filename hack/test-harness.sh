#!/usr/bin/env bash
# Tests of the project's own tooling (not of moby): the patch queue's checks, the
# test programs, the scripts' syntax.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

passed=0
failed=0
check() { # name cmd...
	local name=$1
	shift
	if "$@" >"$AB_BUILD/check.log" 2>&1; then
		echo "ok   $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name"
		sed 's/^/     /' "$AB_BUILD/check.log"
		failed=$((failed + 1))
	fi
}

mkdir -p "$AB_BUILD"
for f in "$AB_ROOT"/hack/*.sh "$AB_ROOT"/hack/*/*.sh "$AB_ROOT"/hack/zoned/zns-vm/*.sh "$AB_ROOT"/.ci/run; do
	check "bash -n ${f#"$AB_ROOT"/}" bash -n "$f"
done
if command -v shellcheck >/dev/null; then
	check "shellcheck hack/" shellcheck -x -S warning "$AB_ROOT"/hack/*.sh "$AB_ROOT"/hack/*/*.sh "$AB_ROOT"/hack/zoned/zns-vm/*.sh \
		"$AB_ROOT"/hack/nodes/unit-run "$AB_ROOT"/.ci/run
fi
if command -v ansible-playbook >/dev/null; then
	for f in "$AB_ROOT"/hack/nodes/ansible/*.yml; do
		check "ansible-playbook --syntax-check ${f#"$AB_ROOT"/}" ansible-playbook --syntax-check -i localhost, "$f"
	done
fi
check "patch queue: applies, exports byte-identical, each patch compiles" "$AB_ROOT/hack/stack/patches.sh" check
# A patch without the Upstream:/Drop-when: trailers is refused.
trailerless() {
	local d rc=0
	d=$(mktemp -d)
	printf '0001-x.patch\n' >"$d/series"
	printf 'From: a <a@b>\nSubject: [PATCH] x: y\n\nMeant for upstream.\n\nSigned-off-by: a <a@b>\n---\n' >"$d/0001-x.patch"
	if "$AB_ROOT/hack/stack/patches.sh" check-trailers "$d"; then rc=1; fi
	printf 'From: a <a@b>\nSubject: [PATCH] x: y\n\nUpstream: yes\nDrop-when: never\nSigned-off-by: a <a@b>\n---\n' >"$d/0001-x.patch"
	"$AB_ROOT/hack/stack/patches.sh" check-trailers "$d" || rc=1
	rm -rf "$d"
	return "$rc"
}
check "patch queue: a patch without Upstream:/Drop-when: trailers is refused" trailerless
# The zns replayer (built in the patched tree) first: the harness's tests
# replay through it.
check "zns-replay: go vet and unit tests (in the patched tree)" bash -c "'$AB_ROOT/hack/zoned/zns-replay.sh' vet && '$AB_ROOT/hack/zoned/zns-replay.sh' test"
PYTHON=${PYTHON:-/usr/bin/python3}
check "harness: suites, statistics, report (unittest)" env PYTHONPATH="$AB_ROOT/hack" "$PYTHON" -m unittest discover -s "$AB_ROOT/hack/ab/tests" -t "$AB_ROOT/hack"
# every run a doc names is committed, every committed run is cited and
# indexed, the durations and headline figures docs quote agree (about 1 s)
check "docs: measurements cited and indexed, durations and headline figures agree" "$PYTHON" "$AB_ROOT/hack/check-docs.py"
check "apihash: go vet and unit tests" bash -c "cd '$AB_ROOT/hack/stack/apihash' && go vet . && go test -count=1 ."
check "typecheck: go vet and unit tests" bash -c "cd '$AB_ROOT/hack/stack/typecheck' && go vet . && go test -count=1 ."
check "linkemu: go vet and unit tests" bash -c "cd '$AB_ROOT/hack/hosts/linkemu' && go vet . && go test -count=1 ."
check "pingpong: go vet and unit tests" bash -c "cd '$AB_ROOT/hack/hosts/testimages/pingpong' && go vet . && go test -count=1 ."
# the log-writes replayer of the power-cut case reads a device: FuzzParse for a
# count of inputs (about 10 s here; go_fuzz in lib.sh)
logwrites() (
	cd "$AB_ROOT/hack/zoned/zns-vm/logwrites" && go vet . && go test -count=1 . &&
		go_fuzz 400000 . FuzzParse
)
check "logwrites: go vet, unit tests, FuzzParse" logwrites
check "monitoring: the alert rules (promtool check and test), the dashboard's queries parse" "$AB_ROOT/hack/nodes/deb/monitoring/check.sh"
check "mkimage: reproducible archives" python3 -m unittest discover -s "$AB_ROOT/hack/hosts/testimages" -p '*_test.py'
for t in "$AB_ROOT"/hack/hosts/testimages/*_test.sh; do
	[ -e "$t" ] || continue
	check "${t#"$AB_ROOT"/}" bash "$t"
done
rm -f "$AB_BUILD/check.log"
echo "harness: $passed passed, $failed failed"
[ "$failed" = 0 ]
