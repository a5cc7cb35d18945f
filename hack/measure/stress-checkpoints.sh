#!/usr/bin/env bash
# A bounded stress run of checkpoints against the patched test host: concurrent
# creates of the same names across and within containers, bad names, deletes,
# and once per run a dockerd killed in the middle of a dump and restarted; then,
# at a low checkpoint-write-bandwidth, clients that give up at random points of
# a create, dockerd killed mid paced-write and mid-delete, restores offered
# from crafted checkpoint directories, and a custom checkpoint root whose mount
# goes away and comes back. At the end it checks what must hold whatever the
# timing, prints a summary (and -o: a JSON of the counts) and exits non-zero on
# any violation. A tool for developers, not part of make test.
#
#   hack/measure/stress-checkpoints.sh [-n containers] [-r rounds] [-k round] [-m MiB,...]
#       [-c cancels] [-w kills] [-d kills] [-x rounds] [-u cycles] [-b rate]
#       [-t seconds] [-s seed] [-o file.json]
#
# See usage() or -h.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

usage() {
	cat <<-EOF
		usage: hack/measure/stress-checkpoints.sh [options]

		Starts the patched test host (hack/hosts/daemon.sh up patched), runs N memory
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

		Then the daemon is reloaded with checkpoint-write-bandwidth at $BW and
		checkpoint-max-concurrent 1, and:
		  cancels   $CANCELS creates (Exit, as a plain docker checkpoint create)
		            whose client gives up after a random time (curl --max-time,
		            0.1 s to the paced write's length), half of them queued
		            behind another container's create (and two thirds of
		            those giving up within 1 s, while queued): afterwards the
		            checkpoint is listed and whole, or it is absent and the
		            container runs; stopped with nothing listed is a loss.
		            Kept ones are restored.
		  kills     $WKILLS times dockerd killed mid paced-write (CRIU finished,
		            the images not yet committed), and $DKILLS times right after a
		            delete was sent; restarted each time. A dump CRIU finished
		            must be listed and whole after the restart (a loss
		            otherwise); a delete cut off leaves its checkpoint listed
		            with every file as before, or not listed: listed with
		            anything missing or changed is a phantom.
		  crafted   $XROUNDS rounds of creates into and restores from checkpoint
		            directories a non-root user could change: world-writable,
		            group-writable, owned by nobody, under a world-writable
		            parent, a world-writable checkpoint in a good root, reached
		            through a symbolic link (the root, a parent); each must be
		            refused with 400 (a create into the good root that holds the
		            world-writable checkpoint is not tried: that root is good).
		            A restore that succeeds is an escape, a create that
		            succeeds a violation. A restore from the same
		            checkpoint in a root-owned 0700 root must succeed. A
		            crafted zoned.json is not tried: it needs a zoned device
		            (counted as not run).
		  mount     $UCYCLES times: checkpoints in a custom root on a tmpfs the
		            script mounts; the mount goes away, dockerd is killed and
		            restarted, lists, deletes and restores are tried there, the
		            mount comes back: every checkpoint listed before is listed
		            with every file as before (a loss otherwise), and one
		            restores.

		Invariants (each breach is counted and makes the exit status 1):
		  - of the concurrent creates of one new name in one container exactly
		    one succeeds (2xx); the others are refused with 409 Conflict, as is
		    a create of a name that exists; bad names are refused with 400;
		    deletes of existing checkpoints succeed; no other status
		  - every checkpoint reported created and not deleted is listed
		    (losses); nothing else is listed, except what a create cut off by
		    a kill or a client that gave up may have finished (phantoms); every
		    listed checkpoint is whole (inventory.img)
		  - the losses, phantoms and escapes of the cases above
		  - no staging (.staging-*) or deleted (.deleting-*) directory is left
		    after a restart, nor at the end
		  - the restores: the memory holder counts on from where it was
		    checkpointed, memory intact
		The whole run is bounded: the cases above stop starting new
		operations after -t seconds (those left are reported as not run).
		Every container, mount, directory and daemon it made is removed at the
		end, also on failure or Ctrl-C.

		options:
		  -n N        containers (default $CONTAINERS)
		  -r R        rounds (default $ROUNDS)
		  -k K        the round in which dockerd is killed; 0: never
		              (default: round R/2+1)
		  -m LIST     memory holders' sizes in MiB, used in turn (default $SIZES)
		  -c N        cancelled creates (default $CANCELS)
		  -w N        kills mid paced-write (default $WKILLS)
		  -d N        kills mid-delete (default $DKILLS)
		  -x N        rounds of crafted directories (default $XROUNDS)
		  -u N        missing-mount cycles (default $UCYCLES)
		  -b RATE     checkpoint-write-bandwidth of those cases (default $BW)
		  -t SECS     start no new operation of those cases after SECS from
		              the start (default $TIME_LIMIT)
		  -s SEED     seed of the random choices (default: random)
		  -o FILE     write the counts as JSON to FILE
		  -h          this text
	EOF
}

CONTAINERS=4
ROUNDS=5
KILL_ROUND=
SIZES=16,32,48,64
SAME=3 # concurrent creates of one name in one container
SEED=$RANDOM
CANCELS=40
WKILLS=4
DKILLS=6
XROUNDS=3
UCYCLES=2
BW=8MiB
TIME_LIMIT=2400
JSON_OUT=
BAD_NAMES=(".." "../x" "." "a/b" "x." ".staging-r1" "../../sentinel" "-x")

while getopts n:r:k:m:c:w:d:x:u:b:t:s:o:h opt; do
	case $opt in
	n) CONTAINERS=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	k) KILL_ROUND=$OPTARG ;;
	m) SIZES=$OPTARG ;;
	c) CANCELS=$OPTARG ;;
	w) WKILLS=$OPTARG ;;
	d) DKILLS=$OPTARG ;;
	x) XROUNDS=$OPTARG ;;
	u) UCYCLES=$OPTARG ;;
	b) BW=$OPTARG ;;
	t) TIME_LIMIT=$OPTARG ;;
	s) SEED=$OPTARG ;;
	o) JSON_OUT=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { usage >&2; exit 2; }
for v in "$CONTAINERS" "$ROUNDS" "$SEED" "$CANCELS" "$WKILLS" "$DKILLS" "$XROUNDS" "$UCYCLES" "$TIME_LIMIT"; do
	[[ $v =~ ^[0-9]+$ ]] || die "not a number: $v (-h for help)"
done
[ "$CONTAINERS" -ge 1 ] && [ "$ROUNDS" -ge 1 ] || die "need at least one container and one round"
KILL_ROUND=${KILL_ROUND:-$((ROUNDS / 2 + 1))}
[[ $KILL_ROUND =~ ^[0-9]+$ ]] && [ "$KILL_ROUND" -le "$ROUNDS" ] || die "-k: a round from 1 to $ROUNDS, or 0"
IFS=, read -r -a SIZE_LIST <<<"$SIZES"
for s in "${SIZE_LIST[@]}"; do [[ $s =~ ^[1-9][0-9]*$ ]] || die "-m: not a size in MiB: $s"; done
[[ $BW =~ ^[1-9][0-9]*(KiB|MiB)$ ]] || die "-b: a rate such as 8MiB: $BW"
if [ -n "$JSON_OUT" ]; then
	: >"$JSON_OUT" || die "-o: cannot write $JSON_OUT"
	JSON_OUT=$(realpath "$JSON_OUT")
fi
RANDOM=$SEED

[ "$(id -u)" = 0 ] || die "needs root (hack/hosts/daemon.sh)"
for c in curl jq docker; do command -v $c >/dev/null || die "$c is missing"; done
[ -f "$AB_BUILD/images/memholder.tar" ] || die "build/images/memholder.tar is missing: run hack/hosts/images.sh build"
if "$AB_ROOT/hack/hosts/daemon.sh" status patched | grep -q running; then
	die "the patched test host is running already; stop it first (hack/hosts/daemon.sh down patched)"
fi

SOCK=$AB_RUN/patched/docker.sock
PIDFILE=$AB_RUN/patched/dockerd.pid
DATA=$AB_VAR/patched/data
SCRATCH=$AB_RUN/patched/exec/checkpoint-scratch
TMP=$(mktemp -d)
STARTED=0
DAEMON_CONFIG= # the daemon.json of the paced cases, once they begin
MOUNTS=()      # what the script mounted, innermost last

cleanup() {
	local rc=$? pid id
	trap - EXIT INT TERM
	for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ "$STARTED" = 1 ]; then
		# the containers go with the data-root; stop them first so that
		# nothing of theirs holds the mounts below
		for id in "${IDS[@]}"; do docker rm -f "$id" >/dev/null 2>&1 || true; done
		"$AB_ROOT/hack/hosts/daemon.sh" down patched >/dev/null 2>&1 || {
			warn "hack/hosts/daemon.sh down patched failed"
			rc=1
		}
	fi
	for ((pid = ${#MOUNTS[@]} - 1; pid >= 0; pid--)); do
		mountpoint -q "${MOUNTS[pid]}" || continue
		umount "${MOUNTS[pid]}" 2>/dev/null || umount -l "${MOUNTS[pid]}" || {
			warn "cannot unmount ${MOUNTS[pid]}"
			rc=1
		}
	done
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

up() {
	"$AB_ROOT/hack/hosts/daemon.sh" up patched ${DAEMON_CONFIG:+--config "$DAEMON_CONFIG"} >"$TMP/env" 2>"$TMP/up.log" || {
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
	ops=$((ops + 1))
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
		compgen -G "$(cpdir "$id")/.deleting*" || true
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
declare -A MIB=()     # id -> the holder's size
declare -A LATEST=()  # id -> the newest checkpoint the cases after the rounds made
IDS=()
# the cases after the rounds
ops=0 cancel_ops=0 cancel_done=0 cancel_kept=0 cancel_absent=0 cancel_lost=0
cancel_at_queue=0 cancel_at_dump=0 cancel_at_write=0 blockers=0
wkill_ops=0 wkill_mid=0 wkill_missed=0 wkill_kept=0 wkill_lost=0
dkill_ops=0 dkill_before=0 dkill_mid=0 dkill_after=0 dkill_listed=0 dkill_gone=0 dkill_phantoms=0
crafted_ops=0 crafted_refused=0 crafted_escapes=0 crafted_created=0 crafted_other=0
control_ok=0 control_failed=0 marker_not_run=0
mount_ops=0 mount_cycles=0 mount_kept=0 mount_lost=0 mount_restored=0
not_run=0

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
	local id=$1 cp=$2 dir=${3:-} n before=${BEFORE["$1 $2"]:--1} i c out first
	restores=$((restores + 1))
	ops=$((ops + 1))
	[ "$(docker inspect -f '{{.State.Running}}' "$id")" = false ] || docker stop -t 5 "$id" >/dev/null
	n=$(count_lines "$id")
	if ! out=$(docker start --checkpoint "$cp" ${dir:+--checkpoint-dir "$dir"} "$id" 2>&1); then
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
	if [ -n "${LATEST[$1]:-}" ] && [ -n "${EXPECT["$1 ${LATEST[$1]}"]:-}" ]; then
		echo "${LATEST[$1]}"
		return 0
	fi
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
	MIB[$id]=$mib
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

# --- the cases after the rounds: paced writes, cancels, kills, crafted
# directories, a missing mount ---

left_time() { [ $((SECONDS - run_start)) -lt "$TIME_LIMIT" ]; }

# create_sync ID NAME EXIT [DIR] [MAX_TIME]: one create; prints the status.
create_sync() {
	local body
	body=$(jq -cn --arg id "$2" --argjson exit "$3" --arg dir "${4:-}" \
		'{CheckpointID: $id, Exit: $exit} + (if $dir == "" then {} else {CheckpointDir: $dir} end)')
	ops=$((ops + 1))
	curl -s -o "$TMP/create.body" -w '%{http_code}' --max-time "${5:-300}" --unix-socket "$SOCK" \
		-X POST -H 'Content-Type: application/json' -d "$body" \
		"http://docker/containers/$1/checkpoints" || true
}

urlq() { jq -rn --arg v "$1" '$v|@uri'; }

# list_in ID DIR: the checkpoint names in a custom root, one a line; fails
# on a status other than 200.
list_in() {
	local code
	code=$(api "$TMP/list" GET "/containers/$1/checkpoints?dir=$(urlq "$2")")
	[ "$code" = 200 ] || return 1
	jq -r '.[].Name' "$TMP/list"
}

# manifest DIR: every file under DIR with its size and checksum.
manifest() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0r sha1sum) 2>/dev/null; }

busy_with() { # ID NAME: a create of NAME in ID's directory is under way
	compgen -G "$(cpdir "$1")/.staging-$2-*" >/dev/null && return 0
	compgen -G "$SCRATCH/.staging-$2-*" >/dev/null && return 0
	return 1
}

running() { [ "$(docker inspect -f '{{.State.Running}}' "$1")" = true ]; }

ensure_running() { # ID: a container the case left stopped starts again
	running "$1" || start_ready "$1"
}

# in_list ID NAME: NAME is in ID's list
in_list() {
	local names
	names=$(listed "$1") || return 2
	grep -qxF "$2" <<<"$names"
}

whole() { [ -f "$(cpdir "$1")/$2/inventory.img" ]; }

paced_config() {
	jq -n --arg bw "$BW" '{"checkpoint-write-bandwidth": $bw, "checkpoint-max-concurrent": 1}' >"$TMP/paced.json"
	DAEMON_CONFIG=$TMP/paced.json
	"$AB_ROOT/hack/hosts/daemon.sh" reload patched --config "$DAEMON_CONFIG" >/dev/null 2>"$TMP/reload.log" || {
		cat "$TMP/reload.log" >&2
		die "the patched test host did not take the paced configuration"
	}
}

kill_dockerd() {
	local pid i
	pid=$(cat "$PIDFILE")
	kill -KILL "$pid"
	for ((i = 0; i < 100; i++)); do [ -e "/proc/$pid" ] || break; sleep 0.1; done
}

# random_ms LO HI: a time in seconds between LO and HI ms
random_ms() { local ms=$(($1 + RANDOM % ($2 - $1 + 1))); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }

mib_of() { echo "${MIB[$1]}"; }

# (a) a client that gives up at a random point of a create with Exit.
cancel_case() {
	local i id other name bname code t at bpid bcode settled k write_ms
	for ((i = 1; i <= CANCELS; i++)); do
		left_time || { not_run=$((not_run + CANCELS - i + 1)); return 0; }
		id=${IDS[RANDOM % ${#IDS[@]}]}
		name=c$i
		write_ms=$(($(mib_of "$id") * 1000 / BW_MIB + 1500))
		t=$(random_ms 100 "$write_ms")
		BEFORE["$id $name"]=$(last_count "$id")
		bpid=
		if [ $((RANDOM % 2)) = 0 ] && [ "${#IDS[@]}" -gt 1 ]; then
			# another container's create takes the one slot first
			k=$(index_of "$id")
			other=${IDS[(k + 1 + RANDOM % (${#IDS[@]} - 1)) % ${#IDS[@]}]}
			bname=b$i
			BEFORE["$other $bname"]=$(last_count "$other")
			blockers=$((blockers + 1))
			ops=$((ops + 1))
			(api "$TMP/blocker.body" POST "/containers/$other/checkpoints" "$(create_json "$bname")" >"$TMP/blocker.code") &
			bpid=$!
			sleep 0.05
			# mostly while the other dumps and this one waits for the slot
			[ $((RANDOM % 3)) = 0 ] || t=$(random_ms 50 1000)
		fi
		cancel_ops=$((cancel_ops + 1))
		code=$(create_sync "$id" "$name" true "" "$t")
		if [[ $code == 2?? ]]; then
			at=finished
			cancel_done=$((cancel_done + 1))
			EXPECT["$id $name"]=1
		else
			MAYBE["$id $name"]=1
			if compgen -G "$SCRATCH/.staging-$name-*/inventory.img" >/dev/null; then
				at="write"
				cancel_at_write=$((cancel_at_write + 1))
			elif busy_with "$id" "$name"; then
				at=dump
				cancel_at_dump=$((cancel_at_dump + 1))
			else
				at=queue
				cancel_at_queue=$((cancel_at_queue + 1))
			fi
		fi
		# what the daemon does with it once the client is gone
		settled=0
		for ((k = 0; k < 600; k++)); do
			if busy_with "$id" "$name"; then settled=0; else settled=$((settled + 1)); fi
			[ "$settled" -ge 3 ] && break
			sleep 0.2
		done
		if in_list "$id" "$name"; then
			if whole "$id" "$name"; then
				cancel_kept=$((cancel_kept + 1))
			else
				NOT_WHOLE["$id $name"]=1
				not_whole=$((not_whole + 1))
				violation "cancel $name on ${NAME_OF[$id]} (gave up after $t s, at $at): listed without its inventory.img"
			fi
			EXPECT["$id $name"]=1
			LATEST[$id]=$name
			restore_check "$id" "$name"
		else
			for ((k = 0; k < 25; k++)); do running "$id" && break; sleep 0.2; done
			if [ "$at" = finished ]; then
				: # counted by check_listed as a loss
			elif running "$id"; then
				cancel_absent=$((cancel_absent + 1))
			else
				cancel_lost=$((cancel_lost + 1))
				violation "cancel $name on ${NAME_OF[$id]} (client gave up after $t s, at $at): the container stopped and no checkpoint is listed"
			fi
			unset "MAYBE[$id $name]"
		fi
		ensure_running "$id"
		if [ -n "$bpid" ]; then
			wait "$bpid" || true
			bcode=$(cat "$TMP/blocker.code")
			if [[ $bcode == 2?? ]]; then
				EXPECT["$other $bname"]=1
				LATEST[$other]=$bname
			else
				errors=$((errors + 1))
				violation "cancel $name: the create $bname on ${NAME_OF[$other]} beside it: $bcode $(head -c 300 "$TMP/blocker.body")"
			fi
			ensure_running "$other"
		fi
		log "cancel $name on ${NAME_OF[$id]}: client gave up after $t s (at $at)$([ -z "$bpid" ] || echo ", behind $bname")"
	done
	check_listed
}

index_of() { local i; for i in "${!IDS[@]}"; do [ "${IDS[i]}" = "$1" ] && { echo "$i"; return; }; done; echo 0; }

# (b1) dockerd killed while a dump CRIU finished is being written out.
kill_write_case() {
	local i id name cpid k mid stage pid x
	for ((i = 1; i <= WKILLS; i++)); do
		left_time || { not_run=$((not_run + WKILLS - i + 1)); return 0; }
		# the largest holder: the longest write
		id=${IDS[BIG]}
		name=w$i
		BEFORE["$id $name"]=$(last_count "$id")
		wkill_ops=$((wkill_ops + 1))
		ops=$((ops + 1))
		(api "$TMP/w.body" POST "/containers/$id/checkpoints" "$(create_json "$name")" >"$TMP/w.code") &
		cpid=$!
		mid=0
		pid=$(docker inspect -f '{{.State.Pid}}' "$id")
		for ((k = 0; k < 1500; k++)); do
			if compgen -G "$SCRATCH/.staging-$name-*.done" >/dev/null ||
				{ compgen -G "$SCRATCH/.staging-$name-*/inventory.img" >/dev/null &&
					! pgrep -f "^criu: dump .*-t $pid( |\$)" >/dev/null; }; then
				mid=1
				break
			fi
			sleep 0.02
		done
		# somewhere in the write
		[ "$mid" = 0 ] || sleep "$(random_ms 0 $(($(mib_of "$id") * 600 / BW_MIB)))"
		stage=$(compgen -G "$SCRATCH/.staging-$name-*" >/dev/null && echo write || echo after)
		kill_dockerd
		wait "$cpid" || true
		if [ "$mid" = 1 ] && [ "$stage" = write ]; then
			wkill_mid=$((wkill_mid + 1))
		else
			wkill_missed=$((wkill_missed + 1))
		fi
		if [[ $(cat "$TMP/w.code") == 2?? ]]; then EXPECT["$id $name"]=1; else MAYBE["$id $name"]=1; fi
		up
		LATEST[$id]=$name
		after_restart
		if [ -n "${EXPECT["$id $name"]:-}" ]; then
			wkill_kept=$((wkill_kept + 1))
		elif [ "$mid" = 1 ] && [ "$stage" = write ]; then
			wkill_lost=$((wkill_lost + 1))
			violation "kill mid-write $name on ${NAME_OF[$id]}: CRIU had finished the dump; after the restart it is not listed"
		fi
		for x in "${IDS[@]}"; do ensure_running "$x"; done
		log "kill mid-write $name: $([ "$mid" = 1 ] && [ "$stage" = write ] && echo "killed in the write" || echo "the write was not caught"); listed after the restart: $([ -n "${EXPECT["${IDS[BIG]} $name"]:-}" ] && echo yes || echo no)"
	done
}

# (b2) dockerd killed right after a delete was sent.
kill_delete_case() {
	local i id name code dpid state before after dir x
	for ((i = 1; i <= DKILLS; i++)); do
		left_time || { not_run=$((not_run + DKILLS - i + 1)); return 0; }
		id=${IDS[RANDOM % ${#IDS[@]}]}
		name=d$i
		BEFORE["$id $name"]=$(last_count "$id")
		code=$(create_sync "$id" "$name" false)
		if [[ $code != 2?? ]]; then
			errors=$((errors + 1))
			violation "kill mid-delete: create $name on ${NAME_OF[$id]}: $code $(head -c 300 "$TMP/create.body")"
			continue
		fi
		EXPECT["$id $name"]=1
		dir=$(cpdir "$id")/$name
		before=$(manifest "$dir")
		dkill_ops=$((dkill_ops + 1))
		ops=$((ops + 1))
		(api "$TMP/d.body" DELETE "/containers/$id/checkpoints/$name" >"$TMP/d.code") &
		dpid=$!
		sleep "$(random_ms 0 60)"
		kill_dockerd
		wait "$dpid" || true
		# where the delete was when dockerd died (nothing moves now)
		if compgen -G "$(cpdir "$id")/.deleting-$name-*" >/dev/null; then
			state=mid
		elif [ -d "$dir" ]; then
			[ "$(manifest "$dir")" = "$before" ] && state=before || state=mid
		else
			state=after
		fi
		case $state in
		before) dkill_before=$((dkill_before + 1)) ;;
		mid) dkill_mid=$((dkill_mid + 1)) ;;
		after) dkill_after=$((dkill_after + 1)) ;;
		esac
		up
		if in_list "$id" "$name"; then
			after=$(manifest "$dir")
			if [ "$after" = "$before" ]; then
				dkill_listed=$((dkill_listed + 1))
			else
				dkill_phantoms=$((dkill_phantoms + 1))
				NOT_WHOLE["$id $name"]=1
				violation "kill mid-delete $name on ${NAME_OF[$id]} (at the kill: $state): listed after the restart, its files not as before: $(diff <(echo "$before") <(echo "$after") | grep -c '^[<>]') lines differ"
			fi
			if [[ $(cat "$TMP/d.code") == 2?? ]]; then
				dkill_phantoms=$((dkill_phantoms + 1))
				violation "kill mid-delete $name on ${NAME_OF[$id]}: the delete was reported done, and it is listed after the restart"
			fi
		else
			dkill_gone=$((dkill_gone + 1))
			unset "EXPECT[$id $name]"
		fi
		after_restart
		for x in "${IDS[@]}"; do ensure_running "$x"; done
		log "kill mid-delete $name on ${NAME_OF[$id]}: at the kill $state; after the restart $([ -z "${EXPECT["$id $name"]:-}" ] && echo gone || echo listed)"
	done
}

# (c) restores from, and creates into, directories a non-root user could
# change.
crafted_case() {
	local x id good kind d ref before code fails
	id=${IDS[0]}
	mkdir -p "$TMP/roots"
	chmod 0755 "$TMP/roots"
	good=$TMP/roots/good
	mkdir -m 0700 "$good"
	for ((x = 1; x <= XROUNDS; x++)); do
		left_time || { not_run=$((not_run + XROUNDS - x + 1)); return 0; }
		ensure_running "$id"
		BEFORE["$id g$x"]=$(last_count "$id")
		code=$(create_sync "$id" "g$x" false "$good")
		if [[ $code != 2?? ]]; then
			errors=$((errors + 1))
			violation "crafted: create g$x in the good root $good: $code $(head -c 300 "$TMP/create.body")"
			continue
		fi
		ref=$good/g$x
		# the crafted copies of it
		rm -rf "$TMP/roots/c$x"
		mkdir -m 0755 "$TMP/roots/c$x"
		d=$TMP/roots/c$x
		mkdir "$d/world" "$d/group" "$d/nobody" "$d/wwparent" "$d/wwparent/ck" "$d/cpworld"
		for kind in world group nobody wwparent/ck cpworld; do
			cp -a "$ref" "$d/$kind/g$x"
			chmod 0700 "$d/$kind"
		done
		chmod 0777 "$d/world"
		chmod 0770 "$d/group"
		chown nobody:nogroup "$d/nobody"
		chmod 0777 "$d/wwparent"
		chmod 0777 "$d/cpworld/g$x"
		ln -s "$good" "$d/link"
		ln -s "$TMP/roots" "$d/linkparent"
		docker stop -t 5 "$id" >/dev/null
		for kind in world group nobody wwparent/ck cpworld link linkparent/good; do
			# a restore from it
			crafted_ops=$((crafted_ops + 1))
			ops=$((ops + 1))
			code=$(api "$TMP/crafted.body" POST "/containers/$id/start?checkpoint=g$x&checkpoint-dir=$(urlq "$d/$kind")")
			case $code in
			2??)
				crafted_escapes=$((crafted_escapes + 1))
				violation "crafted: a restore from $d/$kind/g$x ($kind) succeeded"
				docker stop -t 5 "$id" >/dev/null
				;;
			400) crafted_refused=$((crafted_refused + 1)) ;;
			*)
				crafted_other=$((crafted_other + 1))
				violation "crafted: a restore from $d/$kind/g$x ($kind): $code, want 400: $(head -c 300 "$TMP/crafted.body")"
				;;
			esac
		done
		start_ready "$id"
		# (a world-writable checkpoint in a good root leaves the root good
		# for a new one)
		for kind in world group nobody wwparent/ck link linkparent/good; do
			crafted_ops=$((crafted_ops + 1))
			code=$(create_sync "$id" "n$x" false "$d/$kind")
			case $code in
			2??)
				crafted_created=$((crafted_created + 1))
				violation "crafted: a create into $d/$kind ($kind) succeeded"
				;;
			400) crafted_refused=$((crafted_refused + 1)) ;;
			*)
				crafted_other=$((crafted_other + 1))
				violation "crafted: a create into $d/$kind ($kind): $code, want 400: $(head -c 300 "$TMP/create.body")"
				;;
			esac
		done
		# the control: the same checkpoint from the good root restores
		fails=$restore_failures
		restore_check "$id" "g$x" "$good"
		if [ "$restore_failures" = "$fails" ]; then
			control_ok=$((control_ok + 1))
		else
			control_failed=$((control_failed + 1))
		fi
		ensure_running "$id"
		log "crafted round $x: $crafted_refused refused so far, $crafted_escapes escapes, control restore $([ "$restore_failures" = "$fails" ] && echo ok || echo FAILED)"
	done
	marker_not_run=1
}

# (d) a custom root on a tmpfs whose mount goes away and comes back.
mount_case() {
	local u store mnt root id k name names code
	declare -A mf=() mid=()
	store=$TMP/mnt-store
	mnt=$TMP/mnt-root
	mkdir -m 0700 "$store" "$mnt"
	mount -t tmpfs -o mode=0700,size=1g stress-ck "$store"
	MOUNTS+=("$store")
	mkdir -m 0700 "$store/ck"
	root=$mnt/ck
	for ((u = 1; u <= UCYCLES; u++)); do
		left_time || { not_run=$((not_run + UCYCLES - u + 1)); return 0; }
		mount --bind "$store" "$mnt"
		MOUNTS+=("$mnt")
		# what was kept there before must be there now
		for name in "${!mf[@]}"; do
			id=${mid[$name]}
			if ! names=$(list_in "$id" "$root"); then
				mount_lost=$((mount_lost + 1))
				violation "mount cycle $u: the list of $root failed: $(head -c 300 "$TMP/list")"
			elif ! grep -qxF "$name" <<<"$names" || [ "$(manifest "$root/$name")" != "${mf[$name]}" ]; then
				mount_lost=$((mount_lost + 1))
				violation "mount cycle $u: $name in $root, listed before the mount went away, is not listed whole now"
			else
				mount_kept=$((mount_kept + 1))
			fi
		done
		# new checkpoints there, one per container
		for id in "${IDS[@]}"; do
			left_time || break
			name=m$u-$(index_of "$id")
			BEFORE["$id $name"]=$(last_count "$id")
			mount_ops=$((mount_ops + 1))
			code=$(create_sync "$id" "$name" false "$root")
			if [[ $code == 2?? ]]; then
				mf[$name]=$(manifest "$root/$name")
				mid[$name]=$id
			else
				errors=$((errors + 1))
				violation "mount cycle $u: create $name in $root: $code $(head -c 300 "$TMP/create.body")"
			fi
		done
		# the mount goes away; the daemon crashes and starts without it
		umount "$mnt" || {
			errors=$((errors + 1))
			violation "mount cycle $u: $mnt is busy; unmounted lazily"
			umount -l "$mnt"
		}
		unset 'MOUNTS[${#MOUNTS[@]}-1]'
		mount_cycles=$((mount_cycles + 1))
		kill_dockerd
		up
		after_restart
		for name in "${!mf[@]}"; do
			id=${mid[$name]}
			ensure_running "$id"
			mount_ops=$((mount_ops + 1))
			ops=$((ops + 1))
			list_in "$id" "$root" >/dev/null || true
			# a restore from where the root is missing must fail
			docker stop -t 5 "$id" >/dev/null
			ops=$((ops + 1))
			code=$(api "$TMP/m.body" POST "/containers/$id/start?checkpoint=$name&checkpoint-dir=$(urlq "$root")")
			if [[ $code == 2?? ]]; then
				errors=$((errors + 1))
				violation "mount cycle $u: a restore of $name from the missing $root succeeded"
			fi
			ensure_running "$id"
			ops=$((ops + 1))
			api "$TMP/m.body" DELETE "/containers/$id/checkpoints/$name?dir=$(urlq "$root")" >/dev/null
			rmdir "$mnt/ck" 2>/dev/null || true
			break
		done
		log "mount cycle $u: ${#mf[@]} checkpoints in $root, the mount gone across a crash"
	done
	# back once more: everything there, one restores
	mount --bind "$store" "$mnt"
	MOUNTS+=("$mnt")
	k=0
	for name in "${!mf[@]}"; do
		id=${mid[$name]}
		if names=$(list_in "$id" "$root") && grep -qxF "$name" <<<"$names" &&
			[ "$(manifest "$root/$name")" = "${mf[$name]}" ]; then
			mount_kept=$((mount_kept + 1))
			if [ "$k" = 0 ]; then
				k=1
				local fails=$restore_failures
				restore_check "$id" "$name" "$root"
				[ "$restore_failures" != "$fails" ] || mount_restored=$((mount_restored + 1))
				ensure_running "$id"
			fi
		else
			mount_lost=$((mount_lost + 1))
			violation "mount: $name in $root, listed before the mount went away, is not listed whole at the end"
		fi
	done
}

run_start=$start_time
if [[ $BW == *KiB ]]; then BW_MIB=1; else BW_MIB=${BW%MiB}; fi
BIG=0
for i in "${!IDS[@]}"; do
	[ "${MIB[${IDS[i]}]}" -gt "${MIB[${IDS[BIG]}]}" ] && BIG=$i
done
log "paced cases: checkpoint-write-bandwidth $BW, checkpoint-max-concurrent 1"
paced_config
cancel_case
kill_write_case
kill_delete_case
crafted_case
mount_case

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

lost=$((losses + cancel_lost + wkill_lost + mount_lost))
phantom=$((phantoms + not_whole + dkill_phantoms))
escape=$crafted_escapes
violations=$((errors + lost + phantom + escape + staging + bad_accepted + dup_groups + empty_groups + restore_failures + crafted_created + crafted_other + control_failed))
elapsed=$((SECONDS - start_time))
cat <<EOF

stress-checkpoints: $CONTAINERS containers, $ROUNDS rounds, $elapsed s, seed $SEED, $ops operations
 rounds (no cap)
  create attempts     $attempts
  successes           $successes
  conflicts (409)     $conflicts
  bad-name refusals   $refused
  bad names accepted  $bad_accepted
  deletes             $deletes
  cut off by the kill $interrupted (kill in round $KILL_ROUND, mid-dump: $kill_mid_dump)
  groups: >1 success  $dup_groups
  groups: no success  $empty_groups
 paced cases (checkpoint-write-bandwidth $BW, checkpoint-max-concurrent 1)
  cancels             $cancel_ops (finished in time $cancel_done; gave up waiting $cancel_at_queue, in the dump $cancel_at_dump, in the write $cancel_at_write; $blockers behind another create)
    kept, listed whole $cancel_kept
    absent, running   $cancel_absent
    lost              $cancel_lost (stopped, nothing listed)
  kills mid-write     $wkill_ops (in the write $wkill_mid, not caught $wkill_missed): kept $wkill_kept, lost $wkill_lost
  kills mid-delete    $dkill_ops (before it $dkill_before, mid $dkill_mid, after $dkill_after): listed whole $dkill_listed, gone $dkill_gone, phantoms $dkill_phantoms
  crafted dirs        $crafted_ops attempts: refused (400) $crafted_refused, escapes $crafted_escapes, creates accepted $crafted_created, other statuses $crafted_other
    control restores  $control_ok ok, $control_failed failed
    zoned marker      not run (no zoned device configured)
  missing mount       $mount_cycles cycles, $mount_ops operations: kept $mount_kept, lost $mount_lost, restored $mount_restored
  not run (time)      $not_run
 totals
  other statuses      $errors
  lost                $lost (0 expected)
  phantom             $phantom (0 expected)
  escape              $escape (0 expected)
  listed, not whole   $not_whole
  staging left        $staging
  restores            $restores ($restore_failures failed)
  violations          $violations
EOF
if [ -n "$JSON_OUT" ]; then
	jq -n --arg seed "$SEED" --arg bw "$BW" --arg killmid "$kill_mid_dump" \
		--arg version "$(docker version -f '{{.Server.Version}}' 2>/dev/null || echo unknown)" \
		--argjson v "$(printf '{"containers":%d,"rounds":%d,"seconds":%d,"operations":%d,
"lost":%d,"phantom":%d,"escape":%d,"violations":%d,
"rounds_case":{"create_attempts":%d,"successes":%d,"conflicts":%d,"bad_name_refusals":%d,"bad_names_accepted":%d,"deletes":%d,"cut_off_by_kill":%d,"kill_round":%d,"groups_more_than_one":%d,"groups_none":%d,"losses":%d,"phantoms":%d},
"cancel":{"ops":%d,"finished_in_time":%d,"gave_up_waiting":%d,"gave_up_in_dump":%d,"gave_up_in_write":%d,"behind_another":%d,"kept":%d,"absent_running":%d,"lost":%d},
"kill_mid_write":{"ops":%d,"in_write":%d,"not_caught":%d,"kept":%d,"lost":%d},
"kill_mid_delete":{"ops":%d,"before":%d,"mid":%d,"after":%d,"listed_whole":%d,"gone":%d,"phantoms":%d},
"crafted":{"attempts":%d,"refused":%d,"escapes":%d,"creates_accepted":%d,"other_status":%d,"control_ok":%d,"control_failed":%d,"zoned_marker_not_run":%d},
"missing_mount":{"cycles":%d,"ops":%d,"kept":%d,"lost":%d,"restored":%d},
"other_statuses":%d,"not_whole":%d,"staging_left":%d,"restores":%d,"restore_failures":%d,"not_run":%d}' \
		"$CONTAINERS" "$ROUNDS" "$elapsed" "$ops" "$lost" "$phantom" "$escape" "$violations" \
		"$attempts" "$successes" "$conflicts" "$refused" "$bad_accepted" "$deletes" "$interrupted" "$KILL_ROUND" "$dup_groups" "$empty_groups" "$losses" "$phantoms" \
		"$cancel_ops" "$cancel_done" "$cancel_at_queue" "$cancel_at_dump" "$cancel_at_write" "$blockers" "$cancel_kept" "$cancel_absent" "$cancel_lost" \
		"$wkill_ops" "$wkill_mid" "$wkill_missed" "$wkill_kept" "$wkill_lost" \
		"$dkill_ops" "$dkill_before" "$dkill_mid" "$dkill_after" "$dkill_listed" "$dkill_gone" "$dkill_phantoms" \
		"$crafted_ops" "$crafted_refused" "$crafted_escapes" "$crafted_created" "$crafted_other" "$control_ok" "$control_failed" "$marker_not_run" \
		"$mount_cycles" "$mount_ops" "$mount_kept" "$mount_lost" "$mount_restored" \
		"$errors" "$not_whole" "$staging" "$restores" "$restore_failures" "$not_run")" \
		'$v + {seed: ($seed|tonumber), bandwidth: $bw, kill_round_mid_dump: $killmid, daemon_version: $version}' >"$JSON_OUT"
fi
[ "$violations" = 0 ]
