# slotcron — run `make help` for the targets.
SHELL := /bin/bash
GO    ?= go
PKGS  ?= ./...

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-10s %s\n", $$1, $$2}'

.PHONY: setup
setup: ## install the system packages the tests need (as root; a no-op when present)
	@./scripts/setup.sh

.PHONY: test
test: setup ## install what is missing, then run every test with the race detector
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

.PHONY: short
short: ## quick tests without the race detector or multi-process tests
	$(GO) test -short -count=1 $(PKGS)

.PHONY: run
run: ## run the demo scheduler on the embedded SQLite store
	$(GO) run ./cmd/scheduler run --config config.example.yaml

.PHONY: build
build: ## build the reference binary into bin/scheduler
	$(GO) build -o bin/scheduler ./cmd/scheduler

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: check
check: ## gofmt, go vet, staticcheck, and the shape: Layout, identifier budgets, sizes, admin→engine (tools/check)
	@test -z "$$(gofmt -l .)" || (gofmt -l . && exit 1)
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	cd tools/check && $(GO) vet . && $(GO) test -count=1 . && $(GO) run . -root ../..

CHAOS_STORES   ?= sqlite,redis,postgres,etcd
CHAOS_DURATION ?= 3m
CHAOS_SEED     ?= 0
CHAOS_REPLICAS ?= 4
CHAOS_DIR      ?=
CHAOS_AFTER_DATA_LOSS ?=

.PHONY: chaos
chaos: setup ## kill, freeze, cut and clock faults on real replicas, then the checker (CHAOS_DURATION=10m CHAOS_SEED=N CHAOS_STORES=redis CHAOS_REPLICAS=3 CHAOS_AFTER_DATA_LOSS=run)
	$(GO) test ./internal/chaos -run 'TestChaos$$' -count=1 -timeout 0 -v -args \
		-chaos.stores=$(CHAOS_STORES) -chaos.seed=$(CHAOS_SEED) -chaos.duration=$(CHAOS_DURATION) \
		-chaos.replicas=$(CHAOS_REPLICAS) -chaos.dir=$(abspath $(CHAOS_DIR)) -chaos.after-data-loss=$(CHAOS_AFTER_DATA_LOSS)

BENCH_ARGS ?= -rounds 1 -sizes 1000 -window 20s -warmup 3s -drain 10s -arb-duration 5s

.PHONY: bench
bench: setup ## slotcron beside robfig/cron, gocron and a Go timer, one table (short; BENCH_ARGS: see bench/README.md)
	cd bench && $(GO) run ./cmd/slotbench $(BENCH_ARGS)

.PHONY: microbench
microbench: ## the packages' own Go benchmarks
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
