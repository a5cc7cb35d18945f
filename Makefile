# moby-ab: a patched dockerd and the A/B harness that measures it against stock.
#
#   make ab      build both daemons and run the default A/B suite
#   make test    unit tests of the patched packages, harness, lint, bats and integration tests
#
# See README.md for the rest.

SHELL := /bin/bash
.DEFAULT_GOAL := help

BATS ?= bats
# Debian's python3: the harness plots with Debian's python3-matplotlib and takes its distributions from python3-scipy.
PYTHON ?= /usr/bin/python3
SUITE ?= default
# Moby packages whose unit tests `make test` runs: the ones the series touches
# (found from patches/) plus the config package every option goes through.
GO_TEST_PKGS ?= $(shell hack/stack/test-unit.sh --list 2>/dev/null)

.PHONY: help
help:
	@sed -n 's/^#   //p' Makefile
	@echo
	@echo 'Other targets: deps build build-stock build-patched images deb deb-repo bundle patches-apply'
	@echo '  patches-export patches-check patches-lint rebase rebase-continue rebase-adopt upstream-drift'
	@echo '  test-unit test-pullsim test-fuzz test-zns test-bats test-deb test-nodes test-harness test-integration clean'

# make ab [SUITE=name-or-path] [RESULTS=dir]: run an A/B suite (hyperfine-suites/)
.PHONY: ab
ab: build
	PYTHONPATH=hack $(PYTHON) -m ab run $(SUITE) $(if $(RESULTS),--results $(RESULTS))

.PHONY: deps
deps:
	hack/stack/install-deps.sh

.PHONY: build build-stock build-patched
build:
	hack/stack/build.sh all
build-stock:
	hack/stack/build.sh stock
build-patched:
	hack/stack/build.sh patched

.PHONY: images
images:
	hack/hosts/images.sh build

# Debian packages for test nodes into build/deb (hack/nodes/deb.sh; docs/test-nodes.md, "Install
# on test nodes"): moby-ab-dockerd patched and stock, moby-ab-runtime; lintian
# must report no errors.
.PHONY: deb deb-repo
deb: build
	hack/nodes/deb.sh --lintian
# The packages as a signed apt repository (reprepro): build/apt.
deb-repo: deb
	hack/nodes/apt-repo.sh add build/apt

# The A/B harness with both daemons and their runtime in one tarball for test
# nodes (hack/nodes/bundle.sh; hack/nodes/ansible/ab.yml runs it there): build/bundle.
.PHONY: bundle
bundle: build images
	hack/nodes/bundle.sh

# make rebase UPSTREAM=<module version>: move the series to another upstream
# release (hack/stack/rebase.sh); then rebase-continue after each conflict, rebase-adopt.
.PHONY: rebase rebase-continue rebase-adopt upstream-drift
rebase:
	hack/stack/rebase.sh start $(UPSTREAM)
rebase-continue:
	hack/stack/rebase.sh continue
rebase-adopt:
	hack/stack/rebase.sh adopt
upstream-drift:
	hack/stack/rebase.sh newest

.PHONY: patches-apply patches-export patches-check patches-lint
patches-apply:
	hack/stack/patches.sh apply
patches-export:
	hack/stack/patches.sh export
patches-check:
	hack/stack/patches.sh check
# moby's own checks on what the series changed, in build/moby-patched: gofmt,
# go vet, golangci-lint with the tree's .golangci.yml on the lines it added.
patches-lint:
	hack/stack/patches.sh lint

.PHONY: test test-unit test-pullsim test-fuzz test-containerd test-bats test-deb test-nodes test-harness test-integration test-zns
test: test-unit test-pullsim test-fuzz test-containerd test-harness patches-lint test-zns test-bats test-integration
test-unit:
	hack/stack/test-unit.sh
# The adaptive download limit against the network model of hack/pullsim (not
# part of the series: added to the patched package for the run).
test-pullsim:
	hack/pullsim/test.sh
# patches/containerd/ on containerd's own tree (hack/containerd.pin): applies,
# exports byte for byte, its package's tests under -race, its fuzz targets 10s each.
test-containerd:
	hack/stack/test-containerd.sh
# The Go fuzz tests of hack/stack/fuzz-targets, a count of inputs each (FUZZTIME overrides).
test-fuzz:
	hack/stack/test-fuzz.sh
# The zoned checkpoint store, and the patched daemon end to end, against a real
# kernel's zoned block device (QEMU).
test-zns: build
	hack/hosts/images.sh build
	hack/zoned/test-zns.sh
# The whole fault matrix of checkpoints in the QEMU guest (a failing disk, a
# full one, a power cut at every flush, dockerd killed in each phase), about
# 10 minutes; make test runs two of its cases (test-zns).
.PHONY: test-faults
test-faults: build
	hack/hosts/images.sh build
	hack/zoned/test-faults.sh
test-harness:
	PYTHON=$(PYTHON) hack/test-harness.sh
test-bats: build
	hack/hosts/images.sh build all
	$(BATS) --timing bats/
# The packages installed, upgraded, downgraded and purged in a Debian 12 root
# (bats/deb.bats, also part of test-bats).
test-deb: build
	hack/hosts/images.sh build
	$(BATS) --timing bats/deb.bats
# Two test nodes reached over ssh: the rollout, a rollback and an A/B report
# across both (bats/nodes.bats, also part of test-bats).
test-nodes: build
	hack/hosts/images.sh build
	$(BATS) --timing bats/nodes.bats

test-integration: build images
	cd integration && go test -count=1 -v ./...
	hack/stack/test-moby-integration.sh

.PHONY: clean
clean:
	-hack/hosts/daemon.sh down stock
	-hack/hosts/daemon.sh down patched
	-hack/hosts/registry.sh down
	rm -rf bin build/moby-patched
