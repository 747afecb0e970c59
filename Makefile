# codemojex feed: the commands a developer and CI use. `make run` and
# `make test` are the two that matter; see README.md.

GO           ?= go
TEST_TIMEOUT ?= 20m
CHAOS_TIMEOUT ?= 40m
BENCH_ARGS   ?=

.PHONY: all run test bench chaos generate check-generate build fmt vet clean distclean

all: build

## run: Redis (yours or a private one), three renderers and a game simulator; Ctrl-C stops all.
run:
	bash scripts/run.sh

## test: every test with the race detector (fuzz seed corpora run as plain tests).
test:
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

## bench: the benchmark suite (cmd/feedbench); writes docs/benchmarks.md. BENCH_ARGS=-quick for a short run.
bench:
	@mkdir -p bin
	$(GO) build -o bin/ ./cmd/renderer ./cmd/feedbench
	bin/feedbench -renderer bin/renderer -write docs/benchmarks.md $(BENCH_ARGS)

## chaos: the long chaos run (the short one is part of `make test`).
chaos:
	$(GO) test -race -run '^TestChaos$$' -count=1 -v -timeout $(CHAOS_TIMEOUT) ./e2e -chaos.long

## generate: regenerate the templ components (*_templ.go are committed).
generate:
	$(GO) tool templ generate

## check-generate: fail when the committed *_templ.go differ from a fresh generate.
check-generate: generate
	@dirty="$$(git status --porcelain -- templates)"; \
	if [ -n "$$dirty" ]; then \
		echo "generated templ code is stale; run 'make generate' and commit:" >&2; \
		echo "$$dirty" >&2; \
		git --no-pager diff --stat -- templates >&2; \
		exit 1; \
	fi

## build: every binary into bin/.
build:
	@mkdir -p bin
	$(GO) build -o bin/ ./cmd/...

fmt:
	$(GO) fmt ./...

vet:
	$(GO) vet ./...

## clean: binaries and the test cache; var/ (your local data) stays.
clean:
	rm -rf bin
	$(GO) clean -testcache

## distclean: clean, and remove var/ (local Redis data, SQLite store, logs).
distclean: clean
	rm -rf var
