# braid — see README.md. `make demo` runs the main job; `make test` runs the checks CI runs.
GO      ?= go
BIN     := bin/braid
PKGS    := ./...

.PHONY: all build demo test test-deps vet lint fmt-check tidy-check unit bench fuzz clean

all: build

# build stamps the binary with `git describe` (braid --version); outside git
# it falls back to the version Go records.
build:
	$(GO) build -ldflags "-X github.com/braidhq/braid/internal/version.Version=$$(git describe --always --dirty 2>/dev/null)" -o $(BIN) ./cmd/braid

## demo: start a server and two workers on loopback and run the sample jobs
demo: build
	./$(BIN) demo

## test: gofmt, vet, lint, go.mod tidiness, then every test with the race detector
test: test-deps fmt-check vet lint tidy-check unit

## test-deps: install the system packages the tests use (promtool), as root, when missing
test-deps:
	@sh mk/pkgs.sh

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "not gofmt-ed (run gofmt -w):"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

lint:
	$(GO) tool staticcheck $(PKGS)

tidy-check:
	@cp go.mod /tmp/braid-go.mod.bak; cp go.sum /tmp/braid-go.sum.bak
	@$(GO) mod tidy
	@if ! cmp -s go.mod /tmp/braid-go.mod.bak || ! cmp -s go.sum /tmp/braid-go.sum.bak; then \
		cp /tmp/braid-go.mod.bak go.mod; cp /tmp/braid-go.sum.bak go.sum; \
		echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit"; exit 1; fi

unit:
	$(GO) test -race -timeout 20m $(PKGS)

## bench: a short smoke run of every Go benchmark
bench:
	$(GO) test -run '^$$' -bench . -benchtime 100x $(PKGS)

## fuzz: a short run of each fuzz target
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./wire/
	$(GO) test -run '^$$' -fuzz FuzzHandshake -fuzztime 30s ./transport/
	$(GO) test -run '^$$' -fuzz FuzzFragment -fuzztime 30s ./transport/internal/sctpwire/
	$(GO) test -run '^$$' -fuzz FuzzControl -fuzztime 30s ./transport/internal/sctpwire/
	$(GO) test -run '^$$' -fuzz FuzzStripInitParams -fuzztime 30s ./transport/sctp/
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./internal/netem/
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime 30s ./cmd/braid/

clean:
	rm -rf bin demo-out

-include mk/*.mk
