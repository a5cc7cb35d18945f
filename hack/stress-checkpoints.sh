#!/usr/bin/env bash
# A bounded stress run of checkpoints against the patched test host: concurrent
# creates of the same names across and within containers, bad names, deletes,
# and once per run a dockerd killed in the middle of a dump and restarted. At
# the end it checks what must hold whatever the timing, prints a summary and
# exits non-zero on any violation. A tool for developers, not part of make test.
#
#   hack/stress-checkpoints.sh [-n containers] [-r rounds] [-k round] [-m MiB,...] [-s seed]
#
# See usage() or -h.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<-EOF
		usage: hack/stress-checkpoints.sh [options]

		Starts the patched test host (hack/daemon.sh up patched), runs N memory
		holders and R rounds of checkpoints against them, and stops the test host
		at the end, also on failure or Ctrl-C. The patched test host must not be
		running already.

		Each round, at once: every container gets $SAME creates of the round's
		checkpoint name (the same name in every container), one container a
		create of a name it already has, two creates and one delete with a bad
		name, and every container a delete of its checkpoint of two rounds
		before. In round K dockerd is killed (SIGKILL) while a dump runs and
		started again; the containers it stopped are restored from their newest
		checkpoint.

		Invariants (each breach is counted and makes the exit status 1):
		  - of the concurrent creates of one new name in one container exactly
		    one succeeds (2xx); the others are refused with 409 Conflict, as is
		    a create of a name that exists; bad names are refused with 400;
		    deletes of existing checkpoints succeed; no other status
		  - every checkpoint reported created and not deleted is listed
		    (losses); nothing else is listed, except what a create cut off by
		    the kill may have finished (phantoms); every listed checkpoint is
		    whole (inventory.img)
		  - no staging directory is left after the restart, nor at the end
		  - one listed checkpoint per container restores: the memory holder
		    counts on from where it was checkpointed, memory intact

		options:
		  -n N        containers (default $CONTAINERS)
		  -r R        rounds (default $ROUNDS)
		  -k K        the round in which dockerd is killed; 0: never
		              (default: round R/2+1)
		  -m LIST     memory holders' sizes in MiB, used in turn (default $SIZES)
		  -s SEED     seed of the bad-name choice (default: random)
		  -h          this text
	EOF
}

CONTAINERS=4
ROUNDS=5
KILL_ROUND=
SIZES=16,32,48,64
SAME=3 # concurrent creates of one name in one container
SEED=$RANDOM
BAD_NAMES=(".." "../x" "." "a/b" "x." ".staging-r1" "../../sentinel" "-x")

while getopts n:r:k:m:s:h opt; do
	case $opt in
	n) CONTAINERS=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	k) KILL_ROUND=$OPTARG ;;
	m) SIZES=$OPTARG ;;
	s) SEED=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { usage >&2; exit 2; }
for v in "$CONTAINERS" "$ROUNDS" "$SEED"; do
	[[ $v =~ ^[0-9]+$ ]] || die "not a number: $v (-h for help)"
done
[ "$CONTAINERS" -ge 1 ] && [ "$ROUNDS" -ge 1 ] || die "need at least one container and one round"
KILL_ROUND=${KILL_ROUND:-$((ROUNDS / 2 + 1))}
[[ $KILL_ROUND =~ ^[0-9]+$ ]] && [ "$KILL_ROUND" -le "$ROUNDS" ] || die "-k: a round from 1 to $ROUNDS, or 0"
IFS=, read -r -a SIZE_LIST <<<"$SIZES"
for s in "${SIZE_LIST[@]}"; do [[ $s =~ ^[1-9][0-9]*$ ]] || die "-m: not a size in MiB: $s"; done
RANDOM=$SEED

[ "$(id -u)" = 0 ] || die "needs root (hack/daemon.sh)"
for c in curl jq docker; do command -v $c >/dev/null || die "$c is missing"; done
[ -f "$AB_BUILD/images/memholder.tar" ] || die "build/images/memholder.tar is missing: run hack/images.sh build"
if "$AB_ROOT/hack/daemon.sh" status patched | grep -q running; then
	die "the patched test host is running already; stop it first (hack/daemon.sh down patched)"
fi

SOCK=$AB_RUN/patched/docker.sock
PIDFILE=$AB_RUN/patched/dockerd.pid
DATA=$AB_VAR/patched/data
TMP=$(mktemp -d)
STARTED=0

cleanup() {
	local rc=$? pid
	trap - EXIT INT TERM
	for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ "$STARTED" = 1 ]; then
		"$AB_ROOT/hack/daemon.sh" down patched >/dev/null 2>&1 || {
			warn "hack/daemon.sh down patched failed"
			rc=1
		}
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

up() {
	"$AB_ROOT/hack/daemon.sh" up patched >"$TMP/env" 2>"$TMP/up.log" || {
		cat "$TMP/up.log" >&2
		die "the patched test host did not start"
	}
	STARTED=1
	. "$TMP/env"
	export DOCKER_HOST
}

# api BODYFILE METHOD PATH [JSON]: one Engine API call; prints the HTTP
# status (000: no answer) and writes the body to BODYFILE.
api() {
	local args=(-s -o "$1" -w '%{http_code}' --max-time 300 --unix-socket "$SOCK" -X "$2")
	[ -z "${4:-}" ] || args+=(-H 'Content-Type: application/json' -d "$4")
	curl "${args[@]}" "http://docker$3" || true
}

# fire KIND CTR NAME METHOD PATH [JSON]: api in the background; records
# "KIND CTR NAME STATUS" in $TMP/res/<n> and the body in $TMP/body/<n>.
fire() {
	local n=$((seq++)) kind=$1 ctr=$2 name=$3
	shift 3
	(
		code=$(api "$TMP/body/$n" "$@")
		printf '%s %s %s %s %s\n' "$kind" "$ctr" "$name" "${code:-000}" "$n" >"$TMP/res/$n"
	) &
}

create_json() { jq -cn --arg id "$1" '{CheckpointID: $id, Exit: false}'; }

last_count() { # container: the last counter its memory holder reported, or -1
	local c
	c=$(docker logs "$1" 2>&1 | sed -n 's/.* count=\([0-9]*\) .*/\1/p' | tail -1)
	echo "${c:--1}"
}

count_lines() { docker logs "$1" 2>&1 | grep -c ' count=' || true; }

# start_ready CONTAINER: start the container (not from a checkpoint) and wait
# for the memory holder's first report.
start_ready() {
	local n i
	n=$(count_lines "$1")
	docker start "$1" >/dev/null
	for ((i = 0; i < 300; i++)); do
		[ "$(count_lines "$1")" -gt "$n" ] && return 0
		sleep 0.2
	done
	die "memory holder ${NAME_OF[$1]} never got ready"
}

listed() { # container: its checkpoint names, one a line
	local code
	code=$(api "$TMP/list" GET "/containers/$1/checkpoints")
	[ "$code" = 200 ] || { violation "list ${NAME_OF[$1]}: $code $(cat "$TMP/list" 2>/dev/null)"; return 1; }
	jq -r '.[].Name' "$TMP/list"
}

cpdir() { echo "$DATA/containers/$1/checkpoints"; }

staging_left() { # prints staging directories in every container's checkpoint dir
	local id
	for id in "${IDS[@]}"; do
		compgen -G "$(cpdir "$id")/.staging*" || true
	done
}

dump_running() { # CRIU writes a staging dir, or dumps one of our containers
	local id pid
	for id in "${IDS[@]}"; do
		compgen -G "$(cpdir "$id")/.staging*/pages-*.img" >/dev/null && return 0
	done
	for pid in "${PIDS[@]}"; do
		pgrep -f "^criu: dump .*-t $pid( |\$)" >/dev/null && return 0
	done
	return 1
}

# Counters.
attempts=0 successes=0 conflicts=0 refused=0 bad_accepted=0 deletes=0 interrupted=0
errors=0 losses=0 phantoms=0 not_whole=0 staging=0 dup_groups=0 empty_groups=0
restores=0 restore_failures=0 kill_mid_dump=none
declare -A EXPECT=()  # "id name" -> 1: reported created, not deleted
declare -A BEFORE=()  # "id name" -> the counter reported before its create
declare -A MAYBE=()   # "id name" -> 1: a create cut off by the kill
declare -A NAME_OF=() # id -> container name
declare -A NOT_WHOLE=() STAGING=() # what was reported already

violation() {
	printf 'VIOLATION: %s\n' "$*" >&2
}

count_staging() { # when paths: count the staging directories not counted before
	local p
	violation "left $1: $(tr '\n' ' ' <<<"$2")"
	while read -r p; do
		[ -n "${STAGING[$p]:-}" ] || { STAGING[$p]=1; staging=$((staging + 1)); }
	done <<<"$2"
}

# restore_check ID NAME: stop the container if it runs, restore it from NAME and
# check that it counts on from BEFORE with its memory intact.
restore_check() {
	local id=$1 cp=$2 n before=${BEFORE["$1 $2"]:--1} i c out first
	restores=$((restores + 1))
	[ "$(docker inspect -f '{{.State.Running}}' "$id")" = false ] || docker stop -t 5 "$id" >/dev/null
	n=$(count_lines "$id")
	if ! out=$(docker start --checkpoint "$cp" "$id" 2>&1); then
		restore_failures=$((restore_failures + 1))
		violation "restore of ${NAME_OF[$id]} from $cp: $out"
		return 0
	fi
	for ((i = 0; i < 150; i++)); do
		[ "$(count_lines "$id")" -gt "$n" ] && break
		sleep 0.2
	done
	first=$(docker logs "$id" 2>&1 | grep ' count=' | tail -n +"$((n + 1))" | head -1)
	c=$(sed -n 's/.* count=\([0-9]*\) .*/\1/p' <<<"$first")
	if [ -z "$c" ]; then
		restore_failures=$((restore_failures + 1))
		violation "restored from $cp, ${NAME_OF[$id]} printed nothing in 30 s ($(docker inspect -f '{{.State.Status}}' "$id"))"
	elif [ "$c" -le "$before" ]; then
		restore_failures=$((restore_failures + 1))
		violation "restored from $cp, ${NAME_OF[$id]} counts from $c, not on from $before: $first"
	elif docker logs "$id" 2>&1 | grep -q CORRUPT; then
		restore_failures=$((restore_failures + 1))
		violation "restored from $cp, ${NAME_OF[$id]} found its memory corrupted"
	else
		log "restored ${NAME_OF[$id]} from $cp: counts on from $c (checkpointed after $before)"
	fi
}

# check_listed: every expected checkpoint is listed, every listed one whole
# and expected (or left by a create the kill cut off).
check_listed() {
	local id name key names
	local -A seen
	for id in "${IDS[@]}"; do
		seen=()
		if ! names=$(listed "$id"); then
			errors=$((errors + 1))
			continue
		fi
		while read -r name; do
			[ -n "$name" ] || continue
			seen[$name]=1
			if [ ! -f "$(cpdir "$id")/$name/inventory.img" ] && [ -z "${NOT_WHOLE["$id $name"]:-}" ]; then
				NOT_WHOLE["$id $name"]=1
				not_whole=$((not_whole + 1))
				violation "${NAME_OF[$id]}: $name is listed without its inventory.img"
			fi
			if [ -z "${EXPECT["$id $name"]:-}" ]; then
				if [ -n "${MAYBE["$id $name"]:-}" ]; then
					EXPECT["$id $name"]=1
				else
					phantoms=$((phantoms + 1))
					violation "${NAME_OF[$id]}: $name is listed, but no create of it succeeded"
					EXPECT["$id $name"]=1
				fi
			fi
		done <<<"$names"
		for key in "${!EXPECT[@]}"; do
			[ "${key%% *}" = "$id" ] || continue
			name=${key#* }
			if [ -z "${seen[$name]:-}" ]; then
				losses=$((losses + 1))
				violation "${NAME_OF[$id]}: $name was created and is not listed"
				unset "EXPECT[$key]"
			fi
		done
	done
	MAYBE=()
}

newest_expected() { # id: the newest checkpoint reported created and not deleted
	local r
	for ((r = ROUNDS; r >= 1; r--)); do
		[ -n "${EXPECT["$1 r$r"]:-}" ] && { echo "r$r"; return 0; }
	done
	return 1
}

kill_and_restart() {
	local i pid
	for ((i = 0; i < 1000; i++)); do
		dump_running && { kill_mid_dump=yes; break; }
		sleep 0.02
	done
	[ "$kill_mid_dump" = yes ] || { kill_mid_dump=no; warn "no dump seen running; killing dockerd anyway"; }
	pid=$(cat "$PIDFILE")
	log "killing dockerd (pid $pid) in the middle of the round's dumps"
	kill -KILL "$pid"
	for ((i = 0; i < 100; i++)); do [ -e "/proc/$pid" ] || break; sleep 0.1; done
}

after_restart() {
	local left i id cp
	# the staging directories of the killed dumps are swept
	for ((i = 0; i < 25; i++)); do
		left=$(staging_left)
		[ -z "$left" ] && break
		sleep 0.2
	done
	[ -z "$left" ] || count_staging "after the restart" "$left"
	check_listed
	# bring the containers back: from their newest checkpoint where they have one
	for id in "${IDS[@]}"; do
		[ "$(docker inspect -f '{{.State.Running}}' "$id")" = true ] && continue
		if cp=$(newest_expected "$id"); then
			restore_check "$id" "$cp"
		fi
		if [ "$(docker inspect -f '{{.State.Running}}' "$id")" != true ]; then
			start_ready "$id"
		fi
	done
}

# --- the run ---
log "stress: $CONTAINERS containers ($SIZES MiB), $ROUNDS rounds, kill in round $KILL_ROUND, seed $SEED"
up
docker load -q -i "$AB_BUILD/images/memholder.tar" >/dev/null
IDS=()
for ((c = 0; c < CONTAINERS; c++)); do
	mib=${SIZE_LIST[c % ${#SIZE_LIST[@]}]}
	id=$(docker create --name "stress-$c" ab/memholder memholder -r 200 "$mib")
	IDS+=("$id")
	NAME_OF[$id]=stress-$c
	start_ready "$id"
done
start_time=$SECONDS

for ((r = 1; r <= ROUNDS; r++)); do
	rm -rf "$TMP/res" "$TMP/body"
	mkdir "$TMP/res" "$TMP/body"
	PIDS=()
	for id in "${IDS[@]}"; do
		PIDS+=("$(docker inspect -f '{{.State.Pid}}' "$id")")
		BEFORE["$id r$r"]=$(last_count "$id")
	done
	seq=0
	for id in "${IDS[@]}"; do
		for ((k = 0; k < SAME; k++)); do
			fire create "$id" "r$r" POST "/containers/$id/checkpoints" "$(create_json "r$r")"
		done
		if [ "$r" -gt 2 ] && [ -n "${EXPECT["$id r$((r - 2))"]:-}" ]; then
			fire delete "$id" "r$((r - 2))" DELETE "/containers/$id/checkpoints/r$((r - 2))"
		fi
	done
	# a name that exists already
	if [ "$r" -gt 1 ] && [ -n "${EXPECT["${IDS[0]} r$((r - 1))"]:-}" ]; then
		fire exists "${IDS[0]}" "r$((r - 1))" POST "/containers/${IDS[0]}/checkpoints" "$(create_json "r$((r - 1))")"
	fi
	# bad names: two creates, one delete (a name that reaches the daemon)
	for k in 1 2; do
		bad=${BAD_NAMES[RANDOM % ${#BAD_NAMES[@]}]}
		id=${IDS[RANDOM % ${#IDS[@]}]}
		fire bad "$id" "$bad" POST "/containers/$id/checkpoints" "$(create_json "$bad")"
	done
	fire bad "${IDS[0]}" "x." DELETE "/containers/${IDS[0]}/checkpoints/x."

	killed=0
	if [ "$r" = "$KILL_ROUND" ]; then
		kill_and_restart
		killed=1
	fi
	wait
	[ "$killed" = 0 ] || up

	# tally the round
	declare -A ok=()
	r_ok=0 r_conf=0 r_err=0 r_bad=0 r_del=0 r_cut=0
	for f in "$TMP"/res/*; do
		read -r kind id name code n <"$f"
		body=$(head -c 300 "$TMP/body/$n" 2>/dev/null || true)
		case $kind in
		create)
			attempts=$((attempts + 1))
			case $code in
			2??) successes=$((successes + 1)); r_ok=$((r_ok + 1)); ok[$id]=$((${ok[$id]:-0} + 1)); EXPECT["$id $name"]=1 ;;
			409) conflicts=$((conflicts + 1)); r_conf=$((r_conf + 1)) ;;
			000) interrupted=$((interrupted + 1)); r_cut=$((r_cut + 1)); MAYBE["$id $name"]=1 ;;
			*) errors=$((errors + 1)); r_err=$((r_err + 1))
				violation "round $r: create $name on ${NAME_OF[$id]}: $code $body" ;;
			esac
			;;
		exists)
			attempts=$((attempts + 1))
			case $code in
			409) conflicts=$((conflicts + 1)); r_conf=$((r_conf + 1)) ;;
			000) interrupted=$((interrupted + 1)); r_cut=$((r_cut + 1)) ;;
			*) errors=$((errors + 1)); r_err=$((r_err + 1))
				violation "round $r: create of the existing $name on ${NAME_OF[$id]}: $code, want 409: $body" ;;
			esac
			;;
		delete)
			case $code in
			2??) deletes=$((deletes + 1)); r_del=$((r_del + 1)); unset "EXPECT[$id $name]" ;;
			000) interrupted=$((interrupted + 1)); r_cut=$((r_cut + 1)); unset "EXPECT[$id $name]"; MAYBE["$id $name"]=1 ;;
			*) errors=$((errors + 1)); r_err=$((r_err + 1))
				violation "round $r: delete $name on ${NAME_OF[$id]}: $code $body" ;;
			esac
			;;
		bad)
			case $code in
			400) refused=$((refused + 1)); r_bad=$((r_bad + 1)) ;;
			000) interrupted=$((interrupted + 1)); r_cut=$((r_cut + 1)) ;;
			*) bad_accepted=$((bad_accepted + 1))
				violation "round $r: bad name '$name' on ${NAME_OF[$id]}: $code, want 400: $body" ;;
			esac
			;;
		esac
	done
	# exactly one of the concurrent creates of a new name succeeds (unless the
	# kill cut the group off)
	for id in "${IDS[@]}"; do
		n=${ok[$id]:-0}
		if [ "$n" -gt 1 ]; then
			dup_groups=$((dup_groups + 1))
			violation "round $r: $n of the creates of r$r on ${NAME_OF[$id]} succeeded"
		elif [ "$n" = 0 ] && [ -z "${MAYBE["$id r$r"]:-}" ]; then
			empty_groups=$((empty_groups + 1))
			violation "round $r: none of the creates of r$r on ${NAME_OF[$id]} succeeded"
		fi
	done
	unset ok
	log "round $r: creates ok=$r_ok conflicts=$r_conf errors=$r_err cut-off=$r_cut; deletes=$r_del; bad names refused=$r_bad$([ "$killed" = 0 ] || echo "; dockerd killed (mid-dump: $kill_mid_dump) and restarted")"
	if [ "$killed" = 1 ]; then
		after_restart
	else
		check_listed
	fi
	# a container that a failed checkpoint left stopped runs again
	for id in "${IDS[@]}"; do
		if [ "$(docker inspect -f '{{.State.Running}}' "$id")" != true ]; then
			violation "round $r: ${NAME_OF[$id]} is not running after --leave-running checkpoints"
			errors=$((errors + 1))
			start_ready "$id"
		fi
	done
done

# --- the end: nothing staged, everything listed whole, one restore each ---
left=$(staging_left)
[ -z "$left" ] || count_staging "at the end" "$left"
check_listed
for id in "${IDS[@]}"; do
	if cp=$(newest_expected "$id"); then
		restore_check "$id" "$cp"
	else
		log "${NAME_OF[$id]}: no checkpoint to restore"
	fi
done

violations=$((errors + losses + phantoms + not_whole + staging + bad_accepted + dup_groups + empty_groups + restore_failures))
cat <<EOF

stress-checkpoints: $CONTAINERS containers, $ROUNDS rounds, $((SECONDS - start_time)) s, seed $SEED
  create attempts     $attempts
  successes           $successes
  conflicts (409)     $conflicts
  bad-name refusals   $refused
  bad names accepted  $bad_accepted
  deletes             $deletes
  cut off by the kill $interrupted (kill in round $KILL_ROUND, mid-dump: $kill_mid_dump)
  other statuses      $errors
  groups: >1 success  $dup_groups
  groups: no success  $empty_groups
  losses              $losses (0 expected)
  phantoms            $phantoms
  listed, not whole   $not_whole
  staging left        $staging
  restores            $restores ($restore_failures failed)
  violations          $violations
EOF
[ "$violations" = 0 ]
