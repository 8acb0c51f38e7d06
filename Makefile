# braid — see README.md. `make demo` runs the main job; `make test` runs the checks CI runs.
GO      ?= go
PYTHON  ?= python3
BIN     := bin/braid
PKGS    := ./...

.PHONY: all build examples demo test test-deps versitygw vet lint fmt-check tidy-check pion-sctp-check pion-sctp-apply pion-sctp-patch unit test-pion test-python test-api fuzz-api bench fuzz clean

all: build

# build stamps the binary with `git describe` (braid --version), the commit as
# go build in a clone records it; outside git it falls back to what Go records.
build:
	$(GO) build -ldflags "-X github.com/braidhq/braid/version.Version=$$(git describe --always --dirty --abbrev=12 2>/dev/null)" -o $(BIN) ./cmd/braid

## examples: build the example user operations (examples/ops) into bin/ops/*.wasm with the Go
## toolchain's wasip1 port, and the C one (cblur) with clang and wasi-libc when they are installed
## (mk/wasi-c.sh; it says so when it skips); `braid op add` registers them (docs/user-ops.md)
examples:
	@mkdir -p bin/ops
	GOOS=wasip1 GOARCH=wasm $(GO) build -o bin/ops/wordcount.wasm ./examples/ops/wordcount
	GOOS=wasip1 GOARCH=wasm $(GO) build -o bin/ops/blur.wasm ./examples/ops/blur
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o bin/ops/echo.wasm ./examples/ops/echo
	@sh mk/wasi-c.sh build bin/ops/cblur.wasm examples/ops/cblur/cblur.c || [ $$? = 3 ]

## demo: start a server and two workers on loopback and run the sample jobs
demo: build
	./$(BIN) demo

## test: gofmt, vet, lint, go.mod tidiness, the pion/sctp fork against its patch series, every Go test
## with the race detector, the Python client's tests, a short run of the API fuzzer
test: test-deps fmt-check vet lint tidy-check pion-sctp-check unit test-pion test-python test-api

## test-deps: install the system packages the tests use (promtool, chromium, clang with wasi-libc),
## as root, when missing
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

## versitygw: build the S3 server the S3 store's tests run (mk/versitygw.sh; cached in
## ~/.cache/braid/bin). `make unit` builds it first and hands it to the tests, which run the
## store conformance suite against both the local and the S3 store (and skip S3, loudly, only
## when it cannot be built)
versitygw:
	@GO="$(GO)" sh mk/versitygw.sh

## unit: every Go test with the race detector, four packages at a time: most of the time goes
## to tests that wait (timers, round trips across the WAN bed, processes starting), so two at a
## time (go test's default on two cores) left the CPU half idle and took 10.5 min, four 6 min
unit:
	BRAID_VERSITYGW="$$(GO="$(GO)" sh mk/versitygw.sh)" $(GO) test -race -p 4 -timeout 20m $(PKGS)

## pion-sctp-check: third_party/pion-sctp is pion/sctp v1.11.3 (from the Go module proxy, or the
## module cache offline) with the patch series in third_party/pion-sctp-patches applied, byte for
## byte; then mk/pion-sctp.sh's own tests. A few seconds
pion-sctp-check:
	@GO="$(GO)" bash mk/pion-sctp.sh check
	@GO="$(GO)" bash mk/pion-sctp_test.sh

## pion-sctp-apply: rewrite third_party/pion-sctp from the series (a copy that differed is kept
## aside, and the script says where)
pion-sctp-apply:
	@GO="$(GO)" bash mk/pion-sctp.sh apply

## pion-sctp-patch NAME=short-name [MSG=file]: make what third_party/pion-sctp has and the series
## does not the series' next patch, NNNN-short-name.patch, its message from MSG (subject, blank
## line, body: what and why)
pion-sctp-patch:
	@test -n "$(NAME)" || { echo "usage: make pion-sctp-patch NAME=short-name [MSG=message-file]" >&2; exit 2; }
	@GO="$(GO)" bash mk/pion-sctp.sh new-patch "$(NAME)" $(MSG)

## test-pion: pion/sctp's own tests on braid's patched copy (third_party/pion-sctp is a
## module of its own, so the unit target's ./... does not reach it); under a minute, mostly
## waiting on its timers. A failed test is run again up to twice: some of pion's count
## packets against real-time timers and miss on a starved machine (mk/pion-test.sh says which)
test-pion:
	@GO="$(GO)" bash mk/pion-test.sh

## test-python: install the Python client (clients/python) into a new venv, as a user
## would (pip fetches the pinned build backend, setuptools, from PyPI), and run its
## tests against a real server and workers built from this tree
test-python:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(GO) build -o "$$tmp/braid" ./cmd/braid; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	cp -R clients/python "$$tmp/src"; rm -rf "$$tmp/src/build" "$$tmp/src/src/"*.egg-info; \
	"$$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$$tmp/src"; \
	"$$tmp/venv/bin/python" -c 'import braid; print("testing braid", braid.__version__, "installed at", braid.__file__)'; \
	BRAID_BIN="$$tmp/braid" "$$tmp/venv/bin/python" -m unittest discover -s clients/python/tests -v

## test-api: fuzz the HTTP API from server/openapi.json with schemathesis (pinned in
## bench/apifuzz/requirements.txt, in a venv kept in ~/.cache/braid) against a real server and
## worker: no 5xx, every answer as documented, the server still up (mk/apifuzz.sh).
## A fixed seed; APIFUZZ_SEED=N tries another.
test-api:
	@GO="$(GO)" PYTHON="$(PYTHON)" bash mk/apifuzz.sh

## fuzz-api: the same, longer (200 examples per operation and phase, or APIFUZZ_EXAMPLES):
## make fuzz-api APIFUZZ_EXAMPLES=500 APIFUZZ_SEED=$RANDOM
fuzz-api:
	@GO="$(GO)" PYTHON="$(PYTHON)" APIFUZZ_EXAMPLES=$${APIFUZZ_EXAMPLES:-200} bash mk/apifuzz.sh

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
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./netem/
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime 30s ./cmd/braid/
	$(GO) test -run '^$$' -fuzz FuzzCheck -fuzztime 30s ./userop/
	$(GO) test -run '^$$' -fuzz FuzzParseInputList -fuzztime 30s ./server/
	$(GO) test -run '^$$' -fuzz FuzzPipelineSteps -fuzztime 30s ./server/

clean:
	rm -rf bin demo-out

-include mk/*.mk
