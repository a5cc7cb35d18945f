#!/usr/bin/env bash
# The patch queue: patches/series lists git format-patch files, applied in order
# on the upstream tree (build/moby) to make the patched tree (build/moby-patched).
#
#   apply    re-create build/moby-patched from build/moby + patches/ (git am)
#   export   write the patched tree's commits back to patches/ (byte-stable)
#   ensure   apply if the patched tree is missing or patches/ changed since the
#            last apply; keep a tree that has new local commits
#   hash     short hash identifying the series the patched tree holds
#   state    missing | clean | patches-changed | upstream-changed | local-commits | dirty
#   check    every patch has the trailers Upstream: and Drop-when: that agree
#            with each other and with the docs (hack/stack/trailers.py), the series
#            applies cleanly on a fresh tree, exports byte for byte to patches/,
#            and every patch compiles on its own (every package, without
#            linking; one of tests and docs only, its tests; one that leaves
#            the declarations of the packages it changes as they were,
#            hack/stack/apihash, those packages), passes go vet
#            where it changed code, and leaves the Go
#            files it touches (outside vendor/) as gofmt writes them, and
#            the whole series type-checks dockerd for Windows (hack/stack/typecheck:
#            what upstream builds, short of generating code);
#            PATCHES_CHECK_FROM=N builds and formats only patches N and later
#            (the rest of the check is whole; CI checks every patch)
#   lint     moby's own checks on what the series changed, in the patched tree
#            as it stands: gofmt, go vet of the packages it touches, and
#            golangci-lint (the version upstream's Dockerfile pins, installed by
#            hack/stack/install-deps.sh) with the tree's own .golangci.yml,
#            reporting only findings in lines the series added, each with the
#            patch that added the line
#
# Work on a patch: edit and commit in build/moby-patched (one logical change per
# commit; fix-ups squashed into the commit they fix), then `make patches-export`.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PATCHES=$AB_ROOT/patches
STAMP=.git/moby-ab-applied
SERIES_HEADER='# Applied in order onto build/moby by hack/stack/patches.sh; written by `make patches-export`.'

series_files() { # [dir]: the patch files a series lists, in order
	local series=${1:-$PATCHES}/series
	[ -f "$series" ] || return 0
	grep -v -e '^#' -e '^[[:space:]]*$' "$series" || true
}

dir_digest() { # dir: sha256 of the series file and every patch it lists, in order
	local p
	{
		cat "$1/series" 2>/dev/null || true
		series_files "$1" | while read -r p; do cat "$1/$p"; done
	} | sha256sum | cut -c1-64
}

patches_digest() { dir_digest "$PATCHES"; }

apply_into() { # tree
	local tree=$1 p
	rm -rf "$tree"
	abgit clone -q --no-hardlinks -b upstream "$STOCK_TREE" "$tree"
	abgit -C "$tree" checkout -q -b patched
	local files=()
	while read -r p; do
		[ -f "$PATCHES/$p" ] || die "patches: series lists $p, which is not in patches/"
		files+=("$PATCHES/$p")
	done < <(series_files)
	if [ ${#files[@]} -gt 0 ]; then
		if ! abgit -C "$tree" am -q --committer-date-is-author-date "${files[@]}" >&2; then
			p=$(abgit -C "$tree" am --show-current-patch=raw 2>/dev/null | sed -n 's/^Subject: //p' | head -1)
			abgit -C "$tree" am --abort || true
			die "patches: the series does not apply cleanly (failed at: ${p:-?})"
		fi
	fi
	printf '%s %s\n' "$(abgit -C "$tree" rev-parse HEAD)" "$(patches_digest)" >"$tree/$STAMP"
}

export_from() { # tree outdir
	export_series "$1" upstream-base "$2" "$SERIES_HEADER"
}

tree_state() { # prints: missing | clean | patches-changed | upstream-changed | local-commits | dirty
	local tree=$PATCHED_TREE head digest
	[ -d "$tree/.git" ] || {
		echo missing
		return
	}
	[ -z "$(abgit -C "$tree" status --porcelain --untracked-files=no)" ] || {
		echo dirty
		return
	}
	read -r head digest <"$tree/$STAMP" 2>/dev/null || {
		echo local-commits
		return
	}
	if [ "$head" != "$(abgit -C "$tree" rev-parse HEAD)" ]; then
		echo local-commits
	elif [ "$(abgit -C "$tree" rev-parse 'upstream-base^{tree}')" != "$(abgit -C "$STOCK_TREE" rev-parse 'upstream-base^{tree}')" ]; then
		echo upstream-changed
	elif [ "$digest" != "$(patches_digest)" ]; then
		echo patches-changed
	else
		echo clean
	fi
}

cmd_apply() {
	"$AB_ROOT/hack/stack/upstream.sh"
	local state
	state=$(tree_state)
	case "$state" in
	local-commits | dirty)
		[ "${FORCE:-}" = 1 ] ||
			die "patches: $PATCHED_TREE has $state that are not in patches/ (run 'make patches-export' first, or FORCE=1 to discard them)"
		;;
	esac
	log "patches: applying $(series_files | wc -l) patch(es) onto upstream"
	apply_into "$PATCHED_TREE"
}

cmd_ensure() {
	"$AB_ROOT/hack/stack/upstream.sh"
	case "$(tree_state)" in
	missing | patches-changed | upstream-changed) cmd_apply ;;
	clean) ;;
	local-commits) warn "patches: building $PATCHED_TREE with commits not exported to patches/ (make patches-export)" ;;
	dirty) warn "patches: building $PATCHED_TREE with uncommitted changes" ;;
	esac
}

cmd_export() {
	[ -d "$PATCHED_TREE/.git" ] || die "patches: no patched tree at $PATCHED_TREE (make patches-apply)"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	export_from "$PATCHED_TREE" "$tmp"
	mkdir -p "$PATCHES"
	find "$PATCHES" -maxdepth 1 -name '*.patch' -delete
	cp "$tmp"/* "$PATCHES/"
	printf '%s %s\n' "$(abgit -C "$PATCHED_TREE" rev-parse HEAD)" "$(patches_digest)" >"$PATCHED_TREE/$STAMP"
	log "patches: exported $(series_files | wc -l) patch(es) to patches/"
}

cmd_hash() {
	local tmp suffix=
	[ -d "$PATCHED_TREE/.git" ] || die "patches: no patched tree at $PATCHED_TREE (make patches-apply)"
	tmp=$(mktemp -d)
	export_from "$PATCHED_TREE" "$tmp"
	[ -z "$(abgit -C "$PATCHED_TREE" status --porcelain --untracked-files=no)" ] || suffix=.dirty
	echo "$(dir_digest "$tmp" | cut -c1-10)$suffix"
	rm -rf "$tmp"
}

# check_trailers: every patch's message says whether it is meant for upstream
# and when it can be dropped, as the trailers "Upstream: yes|no ..." and
# "Drop-when: ...", and is signed off by its author; for the series' own
# patches, also that the trailers agree with each other and with the docs
# (hack/stack/trailers.py).
check_trailers() { # [dir]
	python3 "$AB_ROOT/hack/stack/trailers.py" --patches "${1:-$PATCHES}" "$AB_ROOT" >&2
}

cmd_check() {
	"$AB_ROOT/hack/stack/upstream.sh"
	local n i commit errs
	log "patches check: every patch says whether it is meant for upstream and when it can be dropped"
	check_trailers || die "patches check: trailers missing, or at odds with each other or the docs (see README, Changing a patch)"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	log "patches check: the series applies cleanly onto upstream"
	apply_into "$tmp/tree"
	log "patches check: export reproduces patches/ byte for byte"
	export_from "$tmp/tree" "$tmp/export"
	# patches/containerd/ is a series of its own (hack/stack/test-containerd.sh).
	if ! diff -ru --exclude=containerd "$PATCHES" "$tmp/export" >&2; then
		die "patches check: exporting the applied series does not reproduce patches/ (run make patches-export and commit)"
	fi
	n=$(abgit -C "$tmp/tree" rev-list --count upstream-base..HEAD)
	i=0
	local from=${PATCHES_CHECK_FROM:-1} apihash=$tmp/apihash before after
	[[ $from =~ ^[1-9][0-9]*$ ]] || die "patches check: PATCHES_CHECK_FROM wants a patch number (got '$from')"
	(cd "$AB_ROOT/hack/stack/apihash" && go build -o "$apihash" .) ||
		die "patches check: building hack/stack/apihash failed"
	for commit in $(abgit -C "$tmp/tree" rev-list --reverse upstream-base..HEAD); do
		i=$((i + 1))
		[ "$i" -ge "$from" ] || continue
		log "patches check: [$i/$n] compiles on its own: $(abgit -C "$tmp/tree" log -1 --format=%s "$commit")"
		# What the packages importing the ones the patch changes are
		# compiled against, before the patch (the tree is at the patch
		# before it): see below.
		mapfile -t code < <(changed_code_packages "$tmp/tree" "$commit")
		before=
		if [ "$i" -gt "$from" ] && [ "${#code[@]}" -gt 0 ] && only_go_tests_and_docs "$tmp/tree" "$commit"; then
			before=$(api_hashes "$tmp/tree" "$apihash" "${code[@]}") || before=
		fi
		abgit -C "$tmp/tree" checkout -q "$commit"
		mapfile -t pkgs < <(changed_packages "$tmp/tree" "$commit")
		# Every package compiled, as go build ./... does, short of linking
		# its dozen commands (half of its time on a patch to ./daemon):
		# compile_errors (go list -export) compiles without linking, and
		# names each package that does not compile. make build links the
		# series' dockerd.
		# A patch that changes only tests and docs compiles what the
		# patch before it did: go vet below compiles its tests.
		# A patch that changes Go code but not what the packages importing
		# it are compiled against (hack/stack/apihash: the declarations and
		# types of the packages it changed, not their function bodies) can
		# change no other package's compilation: compiling the packages it
		# changed is enough, the rest compiled with the patch before it.
		if only_tests_and_docs "$tmp/tree" "$commit" && [ "$i" -gt "$from" ]; then
			errs=
		elif [ -n "$before" ] && after=$(api_hashes "$tmp/tree" "$apihash" "${code[@]}") && [ "$before" = "$after" ]; then
			log "patches check: [$i/$n] the declarations of ${code[*]} are as before: compiling those"
			errs=
		else
			errs=$(compile_errors "$tmp/tree" -tags "$GO_BUILDTAGS" ./...) ||
				die "patches check: patch $i/$n: go list failed"
		fi
		[ -z "$errs" ] || die "patches check: patch $i/$n does not build on its own:"$'\n'"$errs"
		# (-trimpath, as compile_errors: vet compiles the packages'
		# dependencies again without it, the whole tree at the first patch)
		(cd "$tmp/tree" && go vet -trimpath -tags "$GO_BUILDTAGS" "${pkgs[@]}") ||
			die "patches check: patch $i/$n does not pass go vet"
		mapfile -t unformatted < <(unformatted_go_files "$tmp/tree" "$commit")
		[ "${#unformatted[@]}" -eq 0 ] ||
			die "patches check: patch $i/$n leaves Go files gofmt would change: ${unformatted[*]}"
	done
	# Upstream builds dockerd for Windows too: the whole series must.
	# Type-checked (hack/stack/typecheck), dependencies and standard
	# library included, as the compiler's front end does: the errors a
	# Linux-only call in a file Windows builds makes are type errors, and
	# compiling the daemon's dependencies for Windows on a cold cache
	# takes minutes where type-checking them takes seconds.
	log "patches check: the series type-checks dockerd for Windows"
	(cd "$AB_ROOT/hack/stack/typecheck" && go build -o "$tmp/typecheck" .) ||
		die "patches check: building hack/stack/typecheck failed"
	errs=$(cd "$tmp/tree" && GOOS=windows GOARCH=amd64 CGO_ENABLED=0 "$tmp/typecheck" ./cmd/dockerd)
	case $? in 0 | 1) ;; *) die "patches check: type-checking for Windows failed to run" ;; esac
	[ -z "$errs" ] ||
		die "patches check: the series does not type-check dockerd for Windows (keep Linux's calls in _linux.go files):"$'\n'"$errs"
	log "patches check: ok ($n patch(es)${PATCHES_CHECK_FROM:+, built from $from on})"
}

# cmd_lint: moby's own checks, on the patched tree as it stands (local commits
# included), scoped to what the series changed so that upstream's own findings
# stay upstream's: gofmt of the Go files it changed (patches.sh check runs the
# same per patch), go vet of the packages it added lines to, and golangci-lint
# with the tree's own .golangci.yml over those packages, reporting only issues
# in lines the series added (--new-from-rev). Each finding is followed by the
# patch that added its line.
#   LINT_CONCURRENCY  golangci-lint --concurrency (default: the CPUs)
cmd_lint() {
	cmd_ensure
	local tree=$PATCHED_TREE lint=$AB_PREFIX/bin/golangci-lint base want have out rc=0
	base=$(abgit -C "$tree" rev-parse upstream-base)
	want=$(sed -n 's/^ARG GOLANGCI_LINT_VERSION=//p' "$tree/Dockerfile" | head -n 1)
	have=$(golangci_lint_version "$lint") ||
		die "patches lint: no golangci-lint at $lint (run hack/stack/install-deps.sh)"
	[ -z "$want" ] || [ "$want" = "$have" ] ||
		warn "patches lint: upstream's Dockerfile pins golangci-lint $want, $lint is $have (hack/stack/install-deps.sh pins it)"
	# The series must not loosen the checks it is held to.
	abgit -C "$tree" diff --quiet "$base" -- .golangci.yml ||
		die "patches lint: the series changes .golangci.yml; lint with upstream's"

	log "patches lint: gofmt of the Go files the series changed"
	mapfile -t unformatted < <(unformatted_go_files "$tree" "$base" HEAD)
	[ "${#unformatted[@]}" -eq 0 ] ||
		die "patches lint: gofmt would change: ${unformatted[*]}"

	mapfile -t pkgs < <(added_packages "$tree" "$base")
	[ "${#pkgs[@]}" -gt 0 ] || {
		log "patches lint: the series adds no Go lines outside vendor/"
		return 0
	}
	log "patches lint: go vet ${pkgs[*]}"
	# (-trimpath: the packages patches check and build.sh compiled are reused)
	(cd "$tree" && go vet -trimpath -tags "$GO_BUILDTAGS" "${pkgs[@]}") || die "patches lint: go vet failed"

	log "patches lint: golangci-lint $have (.golangci.yml of the tree), lines the series added"
	out=$(mktemp)
	(cd "$tree" && "$lint" run --config .golangci.yml --build-tags "$GO_BUILDTAGS" \
		--new-from-rev "$base" ${LINT_CONCURRENCY:+--concurrency "$LINT_CONCURRENCY"} \
		--output.text.path stdout --output.text.colors=false --show-stats=false \
		"${pkgs[@]}") >"$out" 2> >(unused_exclusions >&2) || rc=$?
	name_patches "$tree" "$base" <"$out"
	rm -f "$out"
	case $rc in
	0) ;;
	1) die "patches lint: golangci-lint reports findings in lines the series added (above: file:line:col: message (linter), then the patch)" ;;
	*) die "patches lint: golangci-lint failed (exit $rc)" ;;
	esac
	log "patches lint: ok (${#pkgs[@]} package(s))"
}

# unused_exclusions: golangci-lint's stderr without its notes on the
# exclusion rules of .golangci.yml that matched nothing (warn-unused): over a
# few packages most of upstream's rules have nothing to match.
unused_exclusions() {
	grep -v 'runner/exclusion_rules\] Skipped 0 issues by rules' || true
}

golangci_lint_version() { # binary: its version (v2.8.0), from `version`
	local out
	out=$("$1" version 2>/dev/null) || return 1
	sed -n 's/^golangci-lint has version \(v*[0-9][^ ]*\) .*/\1/p' <<<"$out" | sed 's/^\([0-9]\)/v\1/'
}

# name_patches tree base: copy golangci-lint's text report, following each
# "file:line:col: ..." finding with the patch that added the line (git blame
# of the file in the work tree).
name_patches() {
	local tree=$1 base=$2 line file n sha
	local -A numbers=()
	local i=0
	for sha in $(abgit -C "$tree" rev-list --reverse "$base..HEAD"); do
		i=$((i + 1))
		numbers[$sha]=$(printf '%04d' "$i")
	done
	while IFS= read -r line; do
		printf '%s\n' "$line"
		[[ $line =~ ^([^[:space:]:]+\.go):([0-9]+):[0-9:]*\ .*\(([a-z0-9]+)\)$ ]] || continue
		file=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]}
		# (the file as it stands: the line may not be committed yet)
		sha=$(abgit -C "$tree" blame --porcelain -L "$n,$n" -- "$file" 2>/dev/null | head -n 1 | cut -d' ' -f1) || true
		case $sha in
		"") ;;
		*[!0]*)
			if [ -n "${numbers[$sha]:-}" ]; then
				printf '    (patch %s: %s)\n' "${numbers[$sha]}" "$(abgit -C "$tree" log -1 --format=%s "$sha")"
			else
				printf "    (upstream's line)\n"
			fi
			;;
		*) printf '    (not committed yet)\n' ;;
		esac
	done
}

added_packages() { # tree base: Go packages (./dir, outside vendor/) in which HEAD adds lines to base
	abgit -C "$1" diff --no-renames --numstat "$2" HEAD -- '*.go' ':!vendor/**' |
		awk '$1 != "-" && $1 > 0 {print $3}' | xargs -r -n1 dirname | sort -u | while read -r d; do
		[ -d "$1/$d" ] && ls "$1/$d"/*.go >/dev/null 2>&1 && echo "./$d"
	done
}

changed_go_files() { # tree commit [commit2]: the Go files outside vendor/ the commit leaves (or that differ between the two)
	abgit -C "$1" diff-tree --no-commit-id --name-only --diff-filter=d -r "${@:2}" -- '*.go' ':!vendor/**'
}

unformatted_go_files() { # tree commit [commit2]: those of changed_go_files that gofmt would change
	changed_go_files "$@" | (cd "$1" && xargs -r gofmt -l)
}

compile_errors() { # tree [go list args...]: compile the packages without linking; print those that fail
	# Packages without Go files to build (test-only ones) are not errors.
	(cd "$1" && shift && go list -e -trimpath -export \
		-f '{{if and .Error (or .GoFiles .InvalidGoFiles)}}{{.ImportPath}}: {{.Error}}{{"\n"}}{{end}}' "$@")
}

only_tests_and_docs() { # tree commit: the commit changes only _test.go, .md and testdata/ files
	! abgit -C "$1" diff-tree --no-commit-id --name-only -r "$2" |
		grep -v -e '_test\.go$' -e '\.md$' -e '/testdata/' -e '^testdata/' >/dev/null
}

only_go_tests_and_docs() { # tree commit: the commit changes only .go, .md and testdata/ files
	! abgit -C "$1" diff-tree --no-commit-id --name-only -r "$2" |
		grep -v -e '\.go$' -e '\.md$' -e '/testdata/' -e '^testdata/' >/dev/null
}

changed_code_packages() { # tree commit: directories (./dir) of the non-test Go files the commit changes
	abgit -C "$1" diff-tree --no-commit-id --name-only -r "$2" -- '*.go' ':!*_test.go' |
		xargs -r -n1 dirname | sort -u | sed 's|^|./|'
}

api_hashes() { # tree apihash dir...: each package's apihash line; fails where one is missing or does not compile
	local tree=$1 tool=$2 d
	shift 2
	# A directory without the package (before a patch adds it, or after
	# one removes it) fails: the caller compiles everything.
	for d in "$@"; do
		ls "$tree/$d"/*.go >/dev/null 2>&1 || return 1
	done
	(cd "$tree" && "$tool" -tags "$GO_BUILDTAGS" "$@" 2>/dev/null)
}

changed_packages() { # tree commit: Go packages (./dir) the commit touches
	abgit -C "$1" diff-tree --no-commit-id --name-only -r "$2" -- '*.go' |
		xargs -r -n1 dirname | sort -u | while read -r d; do
		[ -d "$1/$d" ] && ls "$1/$d"/*.go >/dev/null 2>&1 && echo "./$d"
	done
}

case "${1:-}" in
apply) cmd_apply ;;
export) cmd_export ;;
ensure) cmd_ensure ;;
hash) cmd_hash ;;
state) tree_state ;;
check-trailers) check_trailers "${2:-}" ;;
check) cmd_check ;;
lint) cmd_lint ;;
*) die "usage: hack/stack/patches.sh apply|export|ensure|hash|state|check|lint|check-trailers [dir]" ;;
esac
