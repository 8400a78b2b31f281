# likes: see README.md. `make run` starts a local deployment, `make test` runs every test.
SHELL := /bin/bash
GO ?= go
BIN := bin
FUZZTIME ?= 5s

.PHONY: build test test-short fuzz vet run ramp soak clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./writer-svc ./fanout-svc ./loadgen

vet:
	$(GO) vet ./...

# test: vet, the race-enabled suite (real redis-server, real sockets, real browser), then a brief
# run of every fuzz target. The e2e package runs alone, after the others: its latency and
# capacity assertions compare runs on a 2-core machine, and a neighbouring package's tests would
# make them measure the neighbour.
test: vet
	$(GO) test -race -count=1 -timeout 30m $$($(GO) list ./... | grep -v '/e2e$$')
	$(GO) test -race -count=1 -timeout 30m ./e2e
	$(MAKE) fuzz

fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg >/dev/null; \
	  done; \
	done

run: build
	./scripts/run.sh

ramp: build
	./scripts/ramp.sh

# soak: 10 minutes of one node at half capacity with viewer churn; not part of CI (see
# docs/RELIABILITY.md).
soak: build
	./scripts/soak.sh

clean:
	rm -rf $(BIN) .run
