# bootlab: build, test, lint, benchmark and demo. `make help` lists targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Go 1.26 from the official tarball lives in /usr/local/go/bin, which sudo's
# secure_path leaves out: `sudo make demo` finds it there.
GO          ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
OUT         := $(CURDIR)/_output
BIN         := $(CURDIR)/bin
TOOLS       := $(OUT)/tools
export PATH := $(BIN):$(TOOLS):$(PATH)

# Tests run with -count=1: the e2e and integration tests drive binaries and
# daemons whose inputs go test cannot see, so a cached pass could be stale.

# Pinned tool versions (the module proxy refuses @latest for some modules).
GOTESTSUM_VERSION   := v1.12.3
STATICCHECK_VERSION := v0.7.0
IGNITION_VERSION    := v2.24.0

GOTESTSUM   := $(TOOLS)/gotestsum
STATICCHECK := $(TOOLS)/staticcheck
VALIDATE    := $(TOOLS)/validate
TESTFLAGS   ?=
E2E_TIMEOUT ?= 60m

# The demo lab (README quick start): a rehearsal lab named demo, and its
# plain probe variant (demo-probe), each from its own spec file. DEMO_NAME
# and DEMO_CIDR let a test build its own lab with the same recipe.
DEMO_NAME        ?= demo
DEMO_CIDR        ?=
DEMO_SPEC        ?= $(OUT)/$(DEMO_NAME)/bootlab.yaml
DEMO_PROBE_SPEC  ?= $(OUT)/demo-probe/bootlab.yaml
ACCEL            ?= auto

# make install puts both binaries here: sudo's secure_path has /usr/local/bin,
# so `sudo bootlab` finds them from any directory.
PREFIX      ?= /usr/local
BINDIR      := $(DESTDIR)$(PREFIX)/bin

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The version and commit `bootlab version` prints.
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS     := -X github.com/bootlab/bootlab/internal/version.Version=$(VERSION) -X github.com/bootlab/bootlab/internal/version.Commit=$(COMMIT)

.PHONY: build
build: ## Build bin/bootlab and bin/bootlab-probe (static)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/bootlab ./cmd/bootlab
	@if [[ -d cmd/bootlab-probe ]]; then CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/bootlab-probe ./cmd/bootlab-probe; fi

$(GOTESTSUM):
	GOBIN=$(TOOLS) GOFLAGS= $(GO) install gotest.tools/gotestsum@$(GOTESTSUM_VERSION)
$(STATICCHECK):
	GOBIN=$(TOOLS) GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
$(VALIDATE):
	GOBIN=$(TOOLS) GOFLAGS= $(GO) install github.com/coreos/ignition/v2/validate@$(IGNITION_VERSION)

.PHONY: tools
tools: $(GOTESTSUM) $(STATICCHECK) $(VALIDATE) ## Install the pinned test and lint tools into _output/tools

.PHONY: install
install: build ## Install bootlab and bootlab-probe into $(PREFIX)/bin (default /usr/local/bin; root)
	install -d $(BINDIR)
	install -m 0755 $(BIN)/bootlab $(BIN)/bootlab-probe $(BINDIR)/

.PHONY: uninstall
uninstall: ## Remove bootlab and bootlab-probe from $(PREFIX)/bin
	rm -f $(BINDIR)/bootlab $(BINDIR)/bootlab-probe

.PHONY: host-setup
host-setup: ## Install the packages a lab needs and start libvirtd (root; Debian/Ubuntu)
	scripts/host/setup.sh

.PHONY: host-setup-test
host-setup-test: ## host-setup plus what the tests need (sshd, shellcheck, chromium, ...)
	scripts/host/setup.sh --test

.PHONY: lint
lint: $(STATICCHECK) ## gofmt, go vet (all build tags), staticcheck, shellcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [[ -n "$$out" ]]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags integration,e2e ./...
	$(STATICCHECK) -tags integration,e2e ./...
	shellcheck -x $$(git ls-files 'scripts/*.sh' 'scripts/**/*.sh' 'bench/*.sh' '.ci/run')

.PHONY: unit
unit: $(GOTESTSUM) $(VALIDATE) ## Unit tests only (no daemons needed)
	$(GOTESTSUM) --format testname -- $(TESTFLAGS) ./...

# The preflight KVM smoke test and the probe tests boot the probe kernel: the
# probe image build fetches it (host /boot, else Debian's cloud kernel) once.
.PHONY: test-kernel
test-kernel: build
	$(BIN)/bootlab lab probe-image build -q

# The checksums of the official Kubernetes and etcd artefacts the release
# table downloads (lab/release/checksums.txt): a maintainer's step on a host
# that reaches dl.k8s.io and github.com, never run by the tests or CI. It
# fills each "-" from the projects' own .sha256 and SHA256SUMS files;
# PIN_FLAGS=--check fetches the pinned ones again and fails on a difference.
.PHONY: pin-checksums
pin-checksums: ## Pin the sha256 of the release table's official Kubernetes and etcd artefacts (needs internet)
	scripts/dev/pin-release-checksums.sh $(PIN_FLAGS) lab/release/checksums.txt

# The release's Kubernetes and etcd in the bootlab cache, as `bootlab cache
# build` leaves them: the integration tests that run them (lab/gobuild,
# internal/guestcluster/..., internal/kube; internal/testutil/kubetest) and the
# labs take them from there, so the cold build (about 9 minutes on 2 cores from an empty Go
# build cache, docs/cache.md) happens once per machine, here, and not inside
# a test run; a cached binary is found in a fraction of a second.
.PHONY: test-binaries
test-binaries: build
	$(BIN)/bootlab cache build kubernetes -q
	$(BIN)/bootlab cache build etcd -q

.PHONY: test
# -timeout 40m: with an empty Go build cache lab/gobuild's own etcd build
# (into a cache of its own) still compiles for minutes.
# -p 4: four packages at a time. Their tests own their inputs (temporary
# directories, free ports, a test:///default connection per process), and
# many wait on real processes (etcd, kube-apiserver, haproxy, bash) rather
# than compute, so other packages fill the wait. Measured here (2 cores),
# 1606 tests: 201 s with -p 1 (1545 tests then), 163-176 s with -p 2 on CI
# and 171 s here, 139, 144 and 148 s with -p 4, in one session. The
# CPU-seconds are the same (about 260): -p 4 is near what two cores allow.
test: $(GOTESTSUM) $(VALIDATE) build test-kernel test-binaries ## Unit + integration tests (real libvirtd on test:///default, haproxy, sshd)
	$(GOTESTSUM) --format testname -- -tags integration -p 4 -count=1 -timeout 40m $(TESTFLAGS) ./...

# E2E_PARALLEL caps how many e2e tests run side by side: each parallel test
# has its own lab, name and network (the tests that share something run
# alone first). The harness admits them (test/e2e/lanes_test.go): the long
# test (the class, with its real control plane) first and alone, since
# beside another lab's guests it took three times as long on 2 emulated
# cores, until its control plane has moved to the masters (then it lends
# all lanes but one); then the short ones two at a time, which kept the
# cores 84% busy against 54% one at a time and took 115 s against 162 s
# for four of them (docs/benchmarks.md, nineteenth round). Go's own -parallel is set above
# the number of tests so that it never picks the order. More cores, more.
E2E_PARALLEL ?= 2

.PHONY: e2e
e2e: $(GOTESTSUM) build test-kernel ## End-to-end tests: real VMs on qemu:///system (root), E2E_PARALLEL (2) side by side
	@mkdir -p $(OUT)/e2e-artifacts
	E2E_PARALLEL=$(E2E_PARALLEL) $(GOTESTSUM) --format testname --jsonfile $(OUT)/e2e-artifacts/e2e.json -- -tags e2e -p 1 -parallel 64 -count=1 -timeout $(E2E_TIMEOUT) $(TESTFLAGS) ./test/e2e/...

# Fuzz targets, TARGET:PACKAGE: every parser of what a user hands bootlab.
# Their seed corpora are in each package's testdata/fuzz/; a crash found is
# written there too, and becomes a test `go test` runs from then on.
# FUZZMINIMIZE bounds the minimizing of each new input by calls, not time
# (scripts/dev/fuzz.sh says why).
FUZZTIME    ?= 15s
FUZZMINIMIZE ?= 1000x
FUZZ_TARGETS := FuzzParseValidate:./lab/spec FuzzCheckPullSecret:./lab/spec FuzzClassParseExpand:./lab/class FuzzParseBootkube:./stages FuzzParse:./internal/guestcluster/clusterbootstrap/create FuzzParsePrefetch:./internal/node FuzzPVHKernel:./lab/probe FuzzParseHeader:./lab/internal/savedstart FuzzReadBundle:./lab/diagnose

.PHONY: fuzz
fuzz: ## Fuzz the spec, class, pull secret, bootkube.sh, manifest, node prefetch, kernel image, save image and log bundle parsers, FUZZTIME (15s) each
	@GO=$(GO) scripts/dev/fuzz.sh $(FUZZTIME) $(FUZZMINIMIZE) $(FUZZ_TARGETS)

# test-all is test then e2e (the e2e tag marks test/e2e only, so the two
# runs cover what one run with both tags did); .ci/run runs the same phases
# one by one and prints each one's time beside its budget.
.PHONY: test-all
test-all: host-setup-test lint fuzz test e2e ## Everything CI runs: the test tools (host-setup-test), lint, fuzz, then unit + integration (make test) and e2e (make e2e)

# The pictures under docs/pictures: the SVGs are drawn by bootlab's own code
# (docs/pictures_test.go fails when a committed one differs); the dashboard
# PNGs come from the browser e2e test on real probe labs (root, minutes).
.PHONY: docs-pictures
docs-pictures: ## Redraw docs/pictures/*.svg (lab topology, bootstrap timeline, etcd membership, troubleshooting tree, the guest cluster's packages) from the code
	$(GO) test -count=1 -run '^TestPictures$$' ./docs/ -update

.PHONY: screenshots
screenshots: build test-kernel ## Dashboard screenshots into docs/pictures (root: boots two small probe labs, a few minutes)
	BOOTLAB_SCREENSHOTS=$(CURDIR)/docs/pictures $(GO) test -tags e2e -p 1 -count=1 -timeout 30m \
		-run '^(TestDashboardInBrowser|TestDashboardFollowsRehearsalStages)$$' ./test/e2e/

.PHONY: bench
bench: build ## Benchmarks: bootlab vs a plain virsh script and checkpoint save/restore of that lab, probe lab time-to-green, a class of 4 labs vs 4 in a row (root), dashboard update time
	$(GO) test -run '^$$' -bench BenchmarkDashboard -benchmem ./dashboard/
	$(GO) test -run '^$$' -bench BenchmarkClassUpOverHosts -benchtime 1x ./cmd/internal/classcmd/
	bench/run.sh
	bench/probe-green.sh
	bench/rehearsal.sh
	bench/class.sh
	bench/class-hosts.sh

.PHONY: probe-image
probe-image: build ## Build (or reuse) the cached probe image
	$(BIN)/bootlab lab probe-image build

# The lab of the README's quick start: a rehearsal lab (the probe profile
# with a bootstrap the stages run on: openshift.manualBootstrap), up and
# verified; its checks that wait for a stage say so (pending), none fails.
# The lab keeps its spec in its lab directory, so the commands printed at
# the end find it by name from any directory.
.PHONY: demo
demo: host-setup install ## Quick start: a rehearsal lab (1 bootstrap, 3 masters, 1 worker) up and verified, ready for `bootlab stage run 07`
	@mkdir -p $(dir $(DEMO_SPEC))
	@[[ -f $(DEMO_SPEC) ]] || printf 'name: %s\nprofile: probe\naccelerator: %s\n%btopology:\n  masters: 3\n  workers: 1\nopenshift:\n  manualBootstrap: true\n' \
		"$(DEMO_NAME)" "$(ACCEL)" "$(if $(DEMO_CIDR),network:\n  cidr: $(DEMO_CIDR)\n)" > $(DEMO_SPEC)
	bootlab lab probe-image build --rehearsal
	bootlab lab up -f $(DEMO_SPEC)
	bootlab lab verify --name $(DEMO_NAME) --timeout 5m
	@# The commands below find the lab as the only one on this host (from
	@# any directory without a bootlab.yaml); with other labs they need --name.
	@if (cd / && bootlab lab config 2>/dev/null | grep -qx 'name: $(DEMO_NAME)'); then t=; else t=' --name $(DEMO_NAME)'; fi; \
	echo; \
	echo "The rehearsal lab $(DEMO_NAME) is up and verified: its masters wait for the Machine Config"; \
	echo "Server that stage 12 starts (pending checks). Run the bootstrap yourself, from any directory:"; \
	echo "  sudo bootlab stage run 07$$t          render etcd and start it: the cluster's first member"; \
	echo "  sudo bootlab lab ssh bootstrap$$t     look around: sudo crictl ps, ls /opt/openshift"; \
	echo "Then docs/rehearsal-lab.md: sudo bootlab stage run --all$$t (the masters' etcd joins, 1 -> 4,"; \
	echo "the bootstrap's leaves, 4 -> 3). Remove the lab with: sudo make demo-down"

.PHONY: demo-down
demo-down: ## Remove the demo lab
	bootlab lab down --name $(DEMO_NAME)

# The plain probe lab: the bootstrap serves the MCS and the API stand-in at
# boot, every node verifies its Ignition chain in seconds (no stage runs).
.PHONY: demo-probe
demo-probe: host-setup install ## A plain probe lab (1 bootstrap, 3 masters, 2 workers) up and verified: the network rehearsal, no stages
	@mkdir -p $(dir $(DEMO_PROBE_SPEC))
	@[[ -f $(DEMO_PROBE_SPEC) ]] || printf 'name: demo-probe\nprofile: probe\naccelerator: %s\nnetwork:\n  cidr: 192.168.127.0/24\ntopology:\n  masters: 3\n  workers: 2\n' "$(ACCEL)" > $(DEMO_PROBE_SPEC)
	bootlab lab probe-image build
	bootlab lab up -f $(DEMO_PROBE_SPEC)
	bootlab lab verify -f $(DEMO_PROBE_SPEC) --timeout 5m
	@echo
	@echo "The probe lab demo-probe is up and verified. Look next at:"
	@echo "  sudo bootlab lab status --name demo-probe             VMs, DNS, load balancer backends"
	@echo "  sudo bootlab lab console bootstrap --name demo-probe  the bootstrap's serial console"
	@echo "  sudo bootlab lab pivot --name demo-probe              take the bootstrap out of the LB, then verify again"
	@echo "Remove it with: sudo make demo-probe-down"

.PHONY: demo-probe-down
demo-probe-down: ## Remove the demo-probe lab
	bootlab lab down --name demo-probe

.PHONY: clean
clean: ## Remove build output
	rm -rf $(BIN) $(OUT)
