# bootlab: build, test, lint, benchmark and demo. `make help` lists targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO          ?= go
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

# The demo lab (README quick start).
DEMO_SPEC   ?= $(OUT)/demo/bootlab.yaml
ACCEL       ?= auto

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

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

.PHONY: host-setup
host-setup: ## Install packages and start libvirtd (root; Debian/Ubuntu)
	scripts/host/setup.sh

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

.PHONY: test
# -timeout 40m: lab/gobuild's integration tests build the release's Kubernetes cold once
# (about 8 minutes on 2 cores), past go test's default 10 minutes with etcd's build.
test: $(GOTESTSUM) $(VALIDATE) build test-kernel ## Unit + integration tests (real libvirtd on test:///default, haproxy, sshd)
	$(GOTESTSUM) --format testname -- -tags integration -p 1 -count=1 -timeout 40m $(TESTFLAGS) ./...

.PHONY: e2e
e2e: $(GOTESTSUM) build test-kernel ## End-to-end tests: real VMs on qemu:///system (root)
	$(GOTESTSUM) --format testname -- -tags e2e -p 1 -count=1 -timeout $(E2E_TIMEOUT) $(TESTFLAGS) ./test/e2e/...

# Fuzz targets, TARGET:PACKAGE: every parser of what a user hands bootlab.
# Their seed corpora are in each package's testdata/fuzz/; a crash found is
# written there too, and becomes a test `go test` runs from then on.
FUZZTIME    ?= 15s
FUZZ_TARGETS := FuzzParseValidate:./lab/spec FuzzCheckPullSecret:./lab/spec FuzzClassParseExpand:./lab/class FuzzParseBootkube:./stages

.PHONY: fuzz
fuzz: ## Fuzz the spec, class, pull secret and bootkube.sh parsers, FUZZTIME (15s) each
	@for t in $(FUZZ_TARGETS); do \
		echo "== $${t%%:*} ($${t#*:}, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t%%:*}\$$" -fuzztime $(FUZZTIME) $${t#*:} || exit 1; \
	done

.PHONY: test-all
test-all: lint fuzz $(GOTESTSUM) $(VALIDATE) build test-kernel ## Everything CI runs: lint, fuzz, then unit, integration and e2e in one run
	$(GOTESTSUM) --format testname -- -tags integration,e2e -p 1 -count=1 -timeout $(E2E_TIMEOUT) $(TESTFLAGS) ./...

# The pictures under docs/pictures: the SVGs are drawn by bootlab's own code
# (docs/pictures_test.go fails when a committed one differs); the dashboard
# PNGs come from the browser e2e test on real probe labs (root, minutes).
.PHONY: docs-pictures
docs-pictures: ## Redraw docs/pictures/*.svg (lab topology, bootstrap timeline, etcd membership) from the code
	$(GO) test -count=1 -run '^TestPictures$$' ./docs/ -update

.PHONY: screenshots
screenshots: build test-kernel ## Dashboard screenshots into docs/pictures (root: boots two small probe labs, a few minutes)
	BOOTLAB_SCREENSHOTS=$(CURDIR)/docs/pictures $(GO) test -tags e2e -p 1 -count=1 -timeout 30m \
		-run '^(TestDashboardInBrowser|TestDashboardFollowsRehearsalStages)$$' ./test/e2e/

.PHONY: bench
bench: build ## Benchmarks: bootlab vs a plain virsh script and checkpoint save/restore of that lab, probe lab time-to-green, a class of 4 labs vs 4 in a row (root), dashboard update time
	$(GO) test -run '^$$' -bench BenchmarkDashboard -benchmem ./internal/dashboard/
	bench/run.sh
	bench/probe-green.sh
	bench/rehearsal.sh
	bench/class.sh

.PHONY: probe-image
probe-image: build ## Build (or reuse) the cached probe image
	$(BIN)/bootlab lab probe-image build

.PHONY: demo
demo: host-setup build ## Quick start: a probe lab (1 bootstrap, 3 masters, 2 workers) up and verified
	@mkdir -p $(dir $(DEMO_SPEC))
	@[[ -f $(DEMO_SPEC) ]] || printf 'name: demo\nprofile: probe\naccelerator: %s\ntopology:\n  masters: 3\n  workers: 2\n' "$(ACCEL)" > $(DEMO_SPEC)
	$(BIN)/bootlab lab probe-image build
	$(BIN)/bootlab lab up -f $(DEMO_SPEC)
	$(BIN)/bootlab lab verify -f $(DEMO_SPEC) --timeout 5m
	@echo
	@echo "The probe lab is up and verified. Look next at:"
	@echo "  $(BIN)/bootlab lab status -f $(DEMO_SPEC)            VMs, DNS, load balancer backends"
	@echo "  $(BIN)/bootlab lab console bootstrap -f $(DEMO_SPEC) the bootstrap's serial console"
	@echo "  $(BIN)/bootlab lab pivot -f $(DEMO_SPEC)             take the bootstrap out of the LB, then verify again"
	@echo "  $(BIN)/bootlab stage list                            the bootkube stages, step by step"
	@echo "To run the stages themselves, rebuild it as a rehearsal lab (docs/rehearsal-lab.md):"
	@echo "  make demo-down && $(BIN)/bootlab lab up --manual-bootstrap -f $(DEMO_SPEC)"
	@echo "  $(BIN)/bootlab stage run --to 07 -f $(DEMO_SPEC)       then: stage validate 07, lab ssh bootstrap"
	@echo "  $(BIN)/bootlab stage run --all -f $(DEMO_SPEC)         all fifteen: the masters' etcd joins (1 -> 4), the bootstrap's leaves (4 -> 3)"
	@echo "Remove it with: make demo-down"

.PHONY: demo-down
demo-down: build ## Remove the demo lab
	$(BIN)/bootlab lab down -f $(DEMO_SPEC)

.PHONY: clean
clean: ## Remove build output
	rm -rf $(BIN) $(OUT)
