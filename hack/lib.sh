# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are for the scripts that source this
# Common helpers for the hack/ scripts. Source it; do not run it.

AB_ROOT=${AB_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
AB_BUILD=${AB_BUILD:-$AB_ROOT/build}
AB_PREFIX=${AB_PREFIX:-/opt/moby-ab}

# The upstream pin (hack/upstream.pin; moved by `make rebase-adopt`).
read_pin() { # file: sets UPSTREAM_* from a pin file
	local line k v
	while read -r line; do
		k=${line%%=*} v=${line#*=}
		case $k in
		VERSION) UPSTREAM_VERSION=$v ;;
		COMMIT) UPSTREAM_COMMIT=$v ;;
		MODULE) UPSTREAM_MODULE=$v ;;
		MODULE_VERSION) UPSTREAM_MODULE_VERSION=$v ;;
		MODULE_SUM) UPSTREAM_MODULE_SUM=$v ;;
		TIME) UPSTREAM_TIME=$v ;;
		esac
	done < <(grep -v -e '^#' -e '^[[:space:]]*$' "$1")
}
read_pin "$AB_ROOT/hack/upstream.pin"

STOCK_TREE=$AB_BUILD/moby
# Upstream's build tags for the daemon (hack/make.sh).
GO_BUILDTAGS="netgo osusergo static_build nri_no_wasm"
PATCHED_TREE=${PATCHED_TREE:-$AB_BUILD/moby-patched}

log() { printf '==> %s\n' "$*" >&2; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# go_fuzz execs pkg name [go test flags...]: Go's fuzzing engine on one target
# of the package in the current directory's module, for a count of inputs
# (-fuzztime Nx), not a duration. A duration's end races Go 1.26's fuzzing
# coordinator: when a worker is still busy at the deadline it reports the
# target failed with "context deadline exceeded" and no input
# (golang/go#75804, fixed in Go 1.27), which a loaded 2-core machine hits. A
# count has no deadline to race; -timeout (FUZZ_TIMEOUT, 5m) still ends a run
# that hangs, as a failure. FUZZTIME, when set, is every target's budget
# instead (a count, "20000x", or a duration with the race above).
go_fuzz() {
	local execs=$1 pkg=$2 name=$3
	shift 3
	local budget=${FUZZTIME:-${execs}x}
	log "fuzz: $pkg $name for $budget"
	go test "$@" -count=1 -run '^$' -fuzz "^$name\$" -fuzztime "$budget" \
		-timeout "${FUZZ_TIMEOUT:-5m}" -parallel 2 "$pkg"
}

# git with a fixed identity and no user configuration, so that commits made by
# the build are the same on every machine.
abgit() {
	GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null \
		GIT_AUTHOR_NAME="moby-ab" GIT_AUTHOR_EMAIL="moby-ab@localhost" \
		GIT_COMMITTER_NAME="moby-ab" GIT_COMMITTER_EMAIL="moby-ab@localhost" \
		git -c core.autocrlf=false -c advice.detachedHead=false "$@"
}

# module_download VERSION [MODULE]: `go mod download -json` of MODULE (the
# upstream module by default) at VERSION (the go command checks it against the
# checksum database).
module_download() {
	local module=${2:-$UPSTREAM_MODULE}
	command -v jq >/dev/null || die "upstream: jq is required (hack/stack/install-deps.sh installs it)"
	log "upstream: fetching Go module $module@$1"
	GOFLAGS=-mod=mod go mod download -json "$module@$1" ||
		die "upstream: go mod download $module@$1 failed (is the Go module proxy reachable?)"
}

# module_tree VERSION SUM DEST SUBJECT BODY [MODULE]: the tree of MODULE (the
# upstream module by default) at VERSION, its
# go.sum hash checked against SUM (empty: not checked), committed into DEST as
# branch "upstream" (a new repository, or a commit on top of DEST's HEAD), with
# the module's time as commit date so the commit is the same everywhere.
module_tree() {
	local version=$1 want=$2 dest=$3 module=${6:-$UPSTREAM_MODULE} json dir sum mtime origin
	json=$(module_download "$version" "$module")
	dir=$(jq -r .Dir <<<"$json")
	sum=$(jq -r .Sum <<<"$json")
	[ -z "$want" ] || [ "$sum" = "$want" ] ||
		die "upstream: module hash mismatch for $version: got $sum, pinned $want"
	origin=$(jq -r '.Origin.Hash // empty' <<<"$json")
	[ -z "$origin" ] || [ "$module" != "$UPSTREAM_MODULE" ] || [ "$origin" = "$UPSTREAM_COMMIT" ] || [ "$version" != "$UPSTREAM_MODULE_VERSION" ] ||
		warn "upstream: module origin is $origin, pinned $UPSTREAM_COMMIT"
	mtime=$(jq -r .Time "$(jq -r .Info <<<"$json")")
	log "upstream: $sum; copying $dir"
	if [ -d "$dest/.git" ]; then
		abgit -C "$dest" rm -q -r -f . >/dev/null
		find "$dest" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
	else
		mkdir -p "$dest"
		abgit -C "$dest" init -q -b upstream
	fi
	cp -a "$dir/." "$dest/"
	chmod -R u+w "$dest"
	abgit -C "$dest" add -A -f .
	GIT_AUTHOR_DATE=$mtime GIT_COMMITTER_DATE=$mtime \
		abgit -C "$dest" commit -q --allow-empty -m "$4" -m "$5"
}

# vendor_tree DEST: add the module tree's vendor/ (`go mod vendor`, what
# upstream's hack/vendor.sh commits beside the code; the module zip leaves it
# out) to DEST's last commit, keeping its dates. The daemon builds from it, so
# the series can carry a change to a vendored module as upstream would.
vendor_tree() {
	local dest=$1 date
	log "upstream: go mod vendor"
	(cd "$dest" && GOFLAGS=-mod=mod go mod vendor) || die "upstream: go mod vendor failed in $dest"
	abgit -C "$dest" add -A -f vendor
	date=$(abgit -C "$dest" log -1 --format=%aI)
	GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date \
		abgit -C "$dest" commit -q --amend --no-edit --allow-empty
}

# run_memholder NAME MiB: start a memory holder (build/images/memholder.tar) on
# the daemon DOCKER_HOST names, and wait until it has filled its memory.
run_memholder() {
	docker load -q -i "$AB_ROOT/build/images/memholder.tar" >/dev/null
	docker run -d --name "$1" ab/memholder memholder "$2" >/dev/null
	local _
	for _ in $(seq 300); do
		docker logs "$1" 2>&1 | grep -q verified_passes= && return 0
		sleep 0.2
	done
	die "memory holder $1 never got ready"
}

# Runtime layout of the test hosts (hack/hosts/daemon.sh, hack/hosts/registry.sh).
AB_RUN=${AB_RUN:-/run/moby-ab}
AB_VAR=${AB_VAR:-/var/lib/moby-ab}
# The registry lives in a network namespace of its own and is reached by every
# flavor at the same address, so image references are the same for both.
REG_NS=ab-reg
REG_ADDR=10.199.0.1
REG_PORT=5000
REGISTRY=$REG_ADDR:$REG_PORT
# The same registry at a second address: to a daemon, a second registry
# (another host:port), which hack/hosts/link.sh --second can put behind a link of
# its own.
REG_ADDR2=10.199.0.2
REGISTRY2=$REG_ADDR2:$REG_PORT

# A test host's index: its veth to the registry is 10.199.<index>.0/30 (its
# second link's 10.199.<10+index>.0/30). stock and patched are dockerd hosts
# (hack/hosts/daemon.sh); ctrd is containerd's own daemon and podman Debian's
# podman, peers the harness compares the patched daemon with
# (hack/hosts/containerd-host.sh, hack/hosts/podman-host.sh). Host names stay short: an
# interface name (ab-<host>-reg2, abl2-<host>) has 15 bytes at most.
TEST_HOSTS="stock patched ctrd podman"
flavor_index() {
	case "$1" in
	stock) echo 1 ;;
	patched) echo 2 ;;
	ctrd) echo 3 ;;
	podman) echo 4 ;;
	*) die "unknown test host '$1' (want one of: $TEST_HOSTS)" ;;
	esac
}

flavor_ns() { echo "ab-$1"; }

# PATH for daemons: the project's binaries, then the pinned runtime stack.
# pid_exe PID: the program PID runs. A program replaced on disk since it
# started (a rebuild) still counts as itself: the kernel marks it "(deleted)".
pid_exe() {
	local exe
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	echo "${exe% (deleted)}"
}

# pidfile_pid PIDFILE EXE: the pid PIDFILE records, if that process still
# runs EXE (a pid reused by another program is not ours to signal).
pidfile_pid() {
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
	[ "$(pid_exe "$pid")" = "$2" ] || return 1
	echo "$pid"
}

# stop_pid PID WHAT SECONDS: SIGTERM to PID (one we started), SIGKILL if it
# is still there after SECONDS (WHAT names it in the warning).
stop_pid() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < $3 * 10; i++)); do
		[ -d "/proc/$pid" ] || return 0
		sleep 0.1
	done
	warn "$2: pid $pid ignored SIGTERM for $3s; killing it"
	kill -KILL "$pid" 2>/dev/null || true
}

# check_settings WHAT JSON KEYS MIN: JSON is an object whose keys are among
# KEYS (a JSON array) and whose values are integers >= MIN; else die, naming
# WHAT (the option) and the key.
check_settings() {
	local what=$1 json=$2 keys=$3 min=$4 bad
	jq -e 'type == "object"' <<<"$json" >/dev/null 2>&1 ||
		die "$what: not a JSON object: $json"
	bad=$(jq -r --argjson k "$keys" '[keys[] | select(. as $x | $k | index($x) | not)] | join(", ")' <<<"$json")
	[ -z "$bad" ] || die "$what: unknown key(s) $bad (known: $(jq -r 'join(", ")' <<<"$keys"))"
	bad=$(jq -r --argjson min "$min" 'to_entries[] | select((.value | type) != "number" or .value < $min or .value != (.value | floor)) | .key' <<<"$json")
	[ -z "$bad" ] || die "$what: $bad: want $([ "$min" = 0 ] && echo "a non-negative integer" || echo "an integer >= $min")"
}

# unmount_under DIR: unmount every mount below DIR, deepest first.
unmount_under() {
	local m
	[ -d "$1" ] || return 0
	for m in $(awk -v d="$1" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
}

ab_path() { echo "$AB_ROOT/bin:$AB_PREFIX/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"; }

ns_exists() { [ -e "/run/netns/$1" ]; }

# Create the registry's namespace (idempotent): lo carries $REG_ADDR and
# $REG_ADDR2.
ensure_reg_ns() {
	if ! ns_exists "$REG_NS"; then
		ip netns add "$REG_NS"
		ip -n "$REG_NS" link set lo up
		ip -n "$REG_NS" addr add "$REG_ADDR/32" dev lo
	fi
	ip -n "$REG_NS" addr replace "$REG_ADDR2/32" dev lo
}

# Create a flavor's network namespace (a "test host") and link it to the
# registry's. Idempotent.
ensure_flavor_ns() {
	local ns
	ns=$(flavor_ns "$1")
	if ! ns_exists "$ns"; then
		ip netns add "$ns"
		ip -n "$ns" link set lo up
	fi
	link_flavor_to_reg "$1"
}

# Remove the registry's namespace when nothing uses it any more: no registry
# runs in it and no flavor is linked to it (daemon.sh up creates it).
remove_reg_ns_if_unused() {
	ns_exists "$REG_NS" || return 0
	local h
	for h in $TEST_HOSTS; do
		ns_exists "$(flavor_ns "$h")" && return 0
	done
	[ -n "$(ip netns pids "$REG_NS" 2>/dev/null)" ] && return 0
	ip netns del "$REG_NS"
}

# host_links_down HOST: the emulated links of a test host (hack/hosts/link.sh,
# its second one too), which hold its namespace open: taken down before it.
host_links_down() {
	if [ -f "$AB_RUN/link-$1.backend" ]; then
		"$AB_ROOT/hack/hosts/link.sh" down "$1" 2>/dev/null || true
	fi
	if [ -f "$AB_RUN/link2-$1.backend" ]; then
		"$AB_ROOT/hack/hosts/link.sh" down "$1" --second 2>/dev/null || true
	fi
}

# host_ns_down NS: a test host's namespace, and the registry's once nothing
# uses it.
host_ns_down() {
	if ns_exists "$1"; then ip netns del "$1"; fi
	remove_reg_ns_if_unused
}

# host_down HOST NS DIR...: a peer's test host torn down: its links, then
# what is mounted under each DIR, its namespace, and the DIRs.
host_down() {
	local h=$1 ns=$2 d
	shift 2
	host_links_down "$h"
	for d in "$@"; do unmount_under "$d"; done
	host_ns_down "$ns"
	rm -rf "$@"
}

# Connect a flavor's namespace to the registry's with a veth pair
# 10.199.<i>.2 (flavor) <-> 10.199.<i>.1 (registry side). Idempotent.
link_flavor_to_reg() {
	local f=$1 i ns
	i=$(flavor_index "$f")
	ns=$(flavor_ns "$f")
	ns_exists "$ns" || return 0
	ensure_reg_ns
	if ip -n "$ns" link show "ab-$f-up" >/dev/null 2>&1; then
		# an existing route (the second link's) stays
		ip -n "$ns" route add "$REG_ADDR2/32" via "10.199.$i.1" 2>/dev/null || true
		return 0
	fi
	veth_to_reg "$f" "" "$i"
	ip -n "$ns" route add "$REG_ADDR/32" via "10.199.$i.1"
	ip -n "$ns" route add "$REG_ADDR2/32" via "10.199.$i.1"
}

# veth_to_reg flavor suffix net: a veth pair ab-<flavor>-up<suffix> in the
# flavor's namespace (10.199.<net>.2/30) <-> ab-<flavor>-reg<suffix> in the
# registry's (10.199.<net>.1/30).
veth_to_reg() {
	local f=$1 sfx=$2 net=$3 ns
	ns=$(flavor_ns "$f")
	# a registry-side end left by a namespace that outlived its deletion
	ip -n "$REG_NS" link del "ab-$f-reg$sfx" 2>/dev/null || true
	ip link add "ab-$f-up$sfx" netns "$ns" type veth peer name "ab-$f-reg$sfx" netns "$REG_NS"
	ip -n "$ns" addr add "10.199.$net.2/30" dev "ab-$f-up$sfx"
	ip -n "$REG_NS" addr add "10.199.$net.1/30" dev "ab-$f-reg$sfx"
	ip -n "$ns" link set "ab-$f-up$sfx" up
	ip -n "$REG_NS" link set "ab-$f-reg$sfx" up
}

# export_series TREE BASE OUT HEADER: TREE's commits after BASE as `git
# format-patch` files in OUT, and OUT/series (HEADER, then their names in
# order); the same bytes on every machine, so that a diff of a series shows
# only real changes.
export_series() {
	local tree=$1 base=$2 out=$3 header=$4
	mkdir -p "$out"
	abgit -C "$tree" -c diff.noprefix=false -c diff.renames=true -c core.abbrev=12 \
		format-patch -q --zero-commit --no-signature --no-numbered --full-index \
		--no-binary --encode-email-headers -o "$out" "$base..HEAD" >/dev/null
	{
		echo "$header"
		(cd "$out" && ls -1 -- *.patch 2>/dev/null) || true
	} >"$out/series"
}
