# gatecheck: the two set-up commands are `make run` and `make test`.
GO      ?= go
GOFLAGS ?=
export GOTOOLCHAIN := local

.PHONY: test vet run build
test: vet
	$(GO) test -race -count=1 ./...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

build:
	CGO_ENABLED=0 $(GO) build -o bin/ ./cmd/...
