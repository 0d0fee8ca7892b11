# gatewitness. The two set-up commands on a fresh machine are `make run` and
# `make test`; everything they need comes from the Go module proxy.
GO ?= go
export GOTOOLCHAIN := local

REPORT_DIR ?= out/reports/reference
# More flags for make run, e.g. RUN_FLAGS='--timing-tolerance 1.5s' on a
# loaded machine (see docs/semantics/timing-tolerance.md).
RUN_FLAGS ?=
# In a git checkout, stamp the commit into the binary: it is the version
# the reports give the reference gateway (go run stamps nothing otherwise).
BUILDVCS := $(if $(shell git rev-parse --git-dir 2>/dev/null),-buildvcs=true)

include kind/Makefile.kind
include Makefile.localcp

.PHONY: run test calibrate test-gwapi-v1.7 vet fmt-check build release proto proto-check perf bench nightly

## run: run the conformance suite in-process against the reference gateway and write the reports
run:
	$(GO) run $(BUILDVCS) ./cmd/gatewitness run --in-process --report-dir $(REPORT_DIR) $(RUN_FLAGS)

## test: gofmt and every Go test, each package under an explicit time limit (TEST_TIMEOUT,
## default 8m), without the race detector; TEST_RACE=all, as CI runs: the race detector for
## all, and go vet beside the tests; TEST_RACE=auto: the race detector for the packages whose
## tests do not import client-go (VET=1 adds vet); see hack/test.sh
test: fmt-check
	GO=$(GO) hack/test.sh

## calibrate: run gatewitness's tests on real HAProxy and nginx behind the reference controller
## (each variant, over-claims included) and fail on a verdict other than calibration/expected.go's;
## skips, naming the install command, when haproxy or nginx is not installed (docs/calibration.md)
calibrate:
	GATEWITNESS_CALIBRATION=1 GATEWITNESS_CALIBRATION_MATRIX=$(CURDIR)/out/calibration $(GO) test -count=1 -timeout 10m -run '^TestCalibration$$' -v ./calibration/

## test-gwapi-v1.7: build and run gatewitness against Gateway API v1.7.0 in a module made outside
## go.mod (fetches the go1.27.3 toolchain for it; see hack/test-gwapi-v1.7.sh)
test-gwapi-v1.7:
	hack/test-gwapi-v1.7.sh

vet: fmt-check
	$(GO) vet ./...
	$(GO) vet -tags kind ./kind/...

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# nightly: see hack/nightly.sh. NIGHTLY_RUN_FLAGS are more flags of
# gatewitness run for both suites; NIGHTLY_LOCALCP is auto, yes or no.
NIGHTLY_DIR ?= out/nightly
NIGHTLY_SITE ?= $(NIGHTLY_DIR)/site
NIGHTLY_HISTORY ?= $(NIGHTLY_SITE)/history
NIGHTLY_RUN_FLAGS ?=
NIGHTLY_LOCALCP ?= auto
NIGHTLY_KEEP ?= 90

## nightly: what the nightly workflow does: the suite in-process and through the local control plane (when built and root), the runs added to a local history, the site built ($(NIGHTLY_SITE)/index.html)
nightly:
	GO='$(GO)' NIGHTLY_DIR='$(NIGHTLY_DIR)' NIGHTLY_SITE='$(NIGHTLY_SITE)' NIGHTLY_HISTORY='$(NIGHTLY_HISTORY)' \
		NIGHTLY_RUN_FLAGS='$(NIGHTLY_RUN_FLAGS)' NIGHTLY_LOCALCP='$(NIGHTLY_LOCALCP)' NIGHTLY_KEEP='$(NIGHTLY_KEEP)' \
		LOCALCP_BIN='$(LOCALCP_BIN)' hack/nightly.sh

## build: static binaries of the CLI and the echo-backend into bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/ ./cmd/...

## release: a release's files in dist/$(VERSION): gatewitness for linux/darwin x amd64/arm64 and the echo-backend for linux, with VERSION stamped, SHA256SUMS, and the echo-backend image gatewitness/echo-backend:$(VERSION) for this machine's architecture only (see hack/release.sh; make release VERSION=v0.1.0)
release:
	@$(if $(filter no,$(RELEASE_IMAGE)),true,$(NEED_DOCKER))
	GO='$(GO)' VERSION='$(VERSION)' hack/release.sh

## proto: regenerate echo-backend/echopb and echo-backend/grpcechopb from proto/ with pinned tools (built into bin/)
proto:
	hack/gen-proto.sh

## proto-check: fail if the generated code differs from what proto/ produces
proto-check: proto
	git diff --exit-code -- echo-backend/echopb echo-backend/grpcechopb

## perf: the side-by-side load run of the echo servers (see docs/performance.md)
perf:
	$(GO) run ./hack/perf

## bench: the Go benchmarks (delay accuracy, ledger, proxy, ...)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
