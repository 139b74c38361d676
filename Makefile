# The TorchTPU compatibility scanner.
#   make run    build, set up the Python environment, start the scanner (web UI + scheduled scans)
#   make test   everything CI runs: Go tests, the harness's linter and its tests on real PyTorch, fuzz seeds, browser tests, real clients
#   make bench  measured benchmarks (ratios against baselines in the same run)
#   make mutation  mutation testing (gremlins) of every package with tests; hours, not part of make test
SHELL := /bin/bash
GO ?= go
BIN := bin/scanner
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# The harness's Python environment lives outside the clone, keyed by the
# hash of internal/harness/requirements.txt; scripts/pyenv.sh builds
# it once and prints its interpreter.
PYTHON = $(shell scripts/pyenv.sh)
ARTIFACTS_DIR ?= $(CURDIR)/artifacts
FUZZTIME ?= 20000x
# Tests reuse compiled inductor kernels across runs (a probe passes
# TORCHINDUCTOR_* through to the harness); scans leave it unset, so a
# result's compile_s is a cold compile.
# SCANNER_TEST_REQUIRE_ALL=1 turns every test that would skip for want of an
# interpreter, a browser or a package into a failure (internal/testenv,
# harness tests/conftest.py): `make test` runs every test or fails.
TEST_ENV = SCANNER_TEST_REQUIRE_ALL=1 SCANNER_PYTHON="$(PYTHON)" TORCHINDUCTOR_CACHE_DIR="$${XDG_CACHE_HOME:-$$HOME/.cache}/torchtpu-scanner/inductor-test"
# The concurrent packages run their tests under the race detector (in
# test-go, instead of a plain run).
RACE_PKGS := ./store/... ./web/... ./internal/metrics/... ./internal/hub/... ./internal/scan/... ./internal/webhook/... ./internal/requests/...

.PHONY: all build run test test-go test-race test-python lint-python test-fuzz test-browser test-clients bench mutation deps pyenv chromium tools vet clean help

all: build

help:
	@sed -n '2,5p' Makefile

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/scanner

pyenv:
	@scripts/pyenv.sh >/dev/null

chromium:
	@scripts/chromium.sh

# The independent clients test-clients runs (schemathesis, feedparser, the Nu Html Checker, axe-core,
# rsvg), and the harness's linter (ruff), pinned in scripts/tools/ and cached apart from the harness's environment.
tools:
	@scripts/tools.sh >/dev/null

deps: pyenv
	$(GO) mod download

run: build pyenv
	SCANNER_PYTHON="$(PYTHON)" ./$(BIN) serve

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

test: deps chromium tools vet lint-python test-python test-go test-fuzz test-browser test-clients
	@echo "make test: all suites passed"

test-go: test-race
	$(TEST_ENV) $(GO) test -count=1 -timeout 25m $$($(GO) list ./... | grep -vxF "$$($(GO) list $(RACE_PKGS))")
	@$(GO) test -count=1 -run '^TestCoverage$$' -v ./internal/preflight | grep 'supported task' | sed 's/^ */coverage of the top-100 fixture: /'

test-race:
	$(TEST_ENV) $(GO) test -race -count=1 -timeout 25m $(RACE_PKGS)

test-python:
	cd internal/harness && $(TEST_ENV) "$(PYTHON)" -m pytest -q -p no:cacheprovider tests

# ruff (pinned in scripts/tools/requirements.txt, installed by scripts/tools.sh) over the harness and its tests,
# with the rules of internal/harness/ruff.toml.
lint-python: tools
	"$$(scripts/tools.sh)/venv/bin/ruff" check internal/harness

# Each fuzz target runs briefly beyond its seed corpus (the seeds also run in test-go).
test-fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

test-browser:
	mkdir -p "$(ARTIFACTS_DIR)"
	SCANNER_TEST_REQUIRE_ALL=1 ARTIFACTS_DIR="$(ARTIFACTS_DIR)" CHROMIUM=/usr/bin/chromium $(GO) test -count=1 -tags browser -timeout 10m ./web/browsertest/...

# Real, independent clients against a served database made by storetest's generator (web/clienttest):
# schemathesis on every operation with every check (no known failures; web/clienttest/testdata/schemathesis.toml),
# feedparser and the JSON Feed 1.1 schema on every feed filter, the Nu Html Checker and axe-core (in
# Chromium, 1440 and 390 px, light and dark) on every page kind, rsvg and the shields endpoint schema on
# the badges. Any error fails the build.
test-clients:
	SCANNER_TEST_REQUIRE_ALL=1 SCANNER_TOOLS="$$(scripts/tools.sh)" CHROMIUM=/usr/bin/chromium $(GO) test -count=1 -tags clients -timeout 15m ./web/clienttest/...

bench: build pyenv
	SCANNER_PYTHON="$(PYTHON)" scripts/bench.sh

# Mutation testing: gremlins (from the Go module proxy) mutates each package
# and runs its tests against every covered mutant, one worker at a time;
# prints the efficacy per package. MUTATION_PKGS narrows it (default, empty:
# every package of the module that has tests).
MUTATION_PKGS ?=
mutation:
	scripts/mutation.sh $(MUTATION_PKGS)

clean:
	rm -rf bin artifacts
