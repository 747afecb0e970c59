# codemojex feed: the commands a developer and CI use. `make run` and
# `make test` are the two that matter; see README.md.

GO           ?= go
TEST_TIMEOUT ?= 20m
CHAOS_TIMEOUT ?= 40m
BENCH_ARGS   ?=

# goimports keeps three import groups: standard library, others, this module.
# Generated *_templ.go are templ's to format (check-generate covers them).
GOIMPORTS  = $(GO) tool goimports -local github.com/codemojex/feed
GO_SOURCES = $(shell git ls-files --cached --others --exclude-standard -- '*.go' ':!:*_templ.go')

.PHONY: all run test test-valkey test-std bench chaos generate check-generate imports check-imports check-tidy build fmt vet clean distclean

all: build

## run: Redis (yours or a private one), three renderers and a game simulator; Ctrl-C stops all.
run:
	bash scripts/run.sh

## test: every test with the race detector (fuzz seed corpora run as plain tests).
test:
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

## test-valkey: the packages that talk to Redis (integration and end to end) on valkey-server.
VALKEY_PKGS ?= ./feed/... ./e2e/... ./internal/redisconn/... ./internal/renderer/... ./internal/testkit/redistest/... ./internal/gamesim/... ./scripts/...
test-valkey:
	CODEMOJEX_REDIS_SERVER=valkey-server $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(VALKEY_PKGS)

## test-std: the web package with every websocket on the std engine (-ws-engine std; the default is nbio).
test-std:
	CODEMOJEX_WS_ENGINE=std $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./web/...

## bench: the benchmark suite (cmd/feedbench); writes docs/benchmarks.md. BENCH_ARGS=-quick for a short run.
bench:
	@mkdir -p bin
	$(GO) build -o bin/ ./cmd/renderer ./cmd/feedbench
	bin/feedbench -renderer bin/renderer -write docs/benchmarks.md $(BENCH_ARGS)

## chaos: the long chaos runs, single node and Redis Cluster (the short ones are part of `make test`).
## Needs root for the full-disk spell (a tmpfs); CHAOS_ARGS='-chaos.events 2500' for a shorter run.
CHAOS_ARGS ?=
CHAOS_LOGS ?= var/chaos-logs
chaos:
	$(GO) test -race -run '^(TestChaos|TestRedisCluster)$$' -count=1 -v -timeout $(CHAOS_TIMEOUT) ./e2e -chaos.long $(if $(CHAOS_LOGS),-chaos.logs $(abspath $(CHAOS_LOGS))) $(CHAOS_ARGS)

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

## imports: group every file's imports (standard library, others, this module) with goimports.
imports:
	$(GOIMPORTS) -w $(GO_SOURCES)

## check-imports: fail when goimports would change a file.
check-imports:
	@out="$$($(GOIMPORTS) -l $(GO_SOURCES))" || exit 1; \
	if [ -n "$$out" ]; then \
		echo "imports not grouped; run 'make imports' and commit:" >&2; \
		echo "$$out" >&2; \
		exit 1; \
	fi

## check-tidy: fail when `go mod tidy` would change go.mod or go.sum.
check-tidy:
	@$(GO) mod tidy -diff >&2 || { echo "go.mod/go.sum not tidy; run 'go mod tidy' and commit" >&2; exit 1; }

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
