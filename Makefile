# likes: see README.md. `make run` starts a local deployment, `make test` runs every test.
SHELL := /bin/bash
GO ?= go
BIN := bin
FUZZTIME ?= 5s
# golangci-lint is pinned here and installed through the Go module proxy into TOOLS, once per
# version (`make clean` keeps it: building it takes minutes).
GOLANGCI_LINT_VERSION := v2.15.0
TOOLS := .tools
GOLANGCI_LINT := $(TOOLS)/golangci-lint-$(GOLANGCI_LINT_VERSION)
# helm, pinned the same way (its v4 module builds here; deploy/helm/helmtest reads HELM_VERSION).
HELM_VERSION := v4.3.2
HELM := $(TOOLS)/helm-$(HELM_VERSION)
# CLIENT is the browser client, likes.js and its elements: the files fanout-svc embeds and serves,
# and the npm package @likes/client (package.json, likes.d.ts, tests, a typed example).
CLIENT := fanout-svc/internal/web/static/client

.PHONY: build test test-short fuzz contract-fuzz vet lint rules js-test chart dist run ramp soak images-offline kube-offline kube-down clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./writer-svc ./fanout-svc ./loadgen ./slotmove

vet:
	$(GO) vet ./...

# lint: golangci-lint with .golangci.yml (the default linters and a few that find real bugs). On a
# clean machine the first run installs the pinned version (see docs/RELIABILITY.md for how long).
# --allow-serial-runners: a second lint on the same machine (two checkouts testing at once) waits
# for the first instead of failing with "parallel golangci-lint is running".
lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run --allow-serial-runners ./...

$(GOLANGCI_LINT):
	@mkdir -p $(TOOLS)
	GOBIN=$(abspath $(TOOLS))/install $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(TOOLS)/install/golangci-lint $@
	rmdir $(TOOLS)/install

# test: vet, lint, the race-enabled suite (real redis-server, real sockets, real browser), then a brief
# run of every fuzz target. The e2e package runs alone, after the others: its latency and
# capacity assertions compare runs on a 2-core machine, and a neighbouring package's tests would
# make them measure the neighbour. The partition suite (deploy/partitiontest: each fault once,
# network cuts, pauses, kills and full disks with viewers watching, and the Sentinel timing test: under 10 minutes; root) runs alone after it, for its
# timings; in the first line it skips, without LIKES_NEMESIS. The Docker suite
# (deploy/dockertest: docker-compose.yml on a real engine, after `make images-offline` where no registry is reachable) runs alone too, then
# the Kubernetes suite (deploy/kubetest: deploy/kube applied to the cluster of `make kube-offline`,
# which it starts and stops), after it: each needs the machine to itself.
test: vet lint rules js-test chart
	$(GO) test -race -count=1 -timeout 30m $$($(GO) list ./... | grep -v -e '/e2e$$' -e '/deploy/dockertest$$' -e '/deploy/kubetest$$' -e '/deploy/partitiontest$$')
	$(GO) test -race -count=1 -timeout 30m ./e2e
	LIKES_NEMESIS=1 $(GO) test -race -count=1 -timeout 20m ./deploy/partitiontest
	$(GO) test -race -count=1 -timeout 30m ./deploy/dockertest
	$(GO) test -race -count=1 -timeout 60m ./deploy/kubetest
	$(MAKE) fuzz

# chart: the Helm chart deploy/helm/likes, linted strictly with its default values and with every
# optional part on, then rendered and decoded by deploy/helm/helmtest (the objects of deploy/base,
# the optional ones, the schema's refusals). The kube suite installs it on a real cluster.
chart: $(HELM)
	$(HELM) lint --strict deploy/helm/likes
	$(HELM) lint --strict deploy/helm/likes -f deploy/helm/helmtest/testdata/all-on.yaml
	HELM=$(abspath $(HELM)) $(GO) test -race -count=1 ./deploy/helm/helmtest

$(HELM):
	@mkdir -p $(TOOLS)
	GOBIN=$(abspath $(TOOLS))/install-helm $(GO) install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
	mv $(TOOLS)/install-helm/helm $@
	rmdir $(TOOLS)/install-helm

# rules: the Prometheus configuration, recording rules and alerts of deploy/monitoring (mounted by
# the Compose monitoring profile, shipped to Kubernetes by deploy/base), checked and unit-tested
# by promtool (Debian's `prometheus` package; .ci/run installs it).
rules:
	promtool check config deploy/monitoring/prometheus.yml
	cd deploy/monitoring && promtool test rules alerts_test.yml

# js-test: the client's unit tests under node's own runner (stream parser, backoff, ordering by
# ts, reactions, follow/unfollow), an esbuild bundle of an app importing the package, tsc
# checking likes.d.ts against a typed example, and the React, Vue and plain HTML examples built
# and type-checked (also under moduleResolution node, with TypeScript 5) (npm test in
# $(CLIENT)). The Chromium tests of the elements and the examples are in e2e
# (reactions_browser_test.go, examples_browser_test.go).
js-test: $(CLIENT)/node_modules/.package-lock.json
	cd $(CLIENT) && npm test --silent

# npm ci installs the pinned typescript and esbuild once per package-lock.json (npm writes
# node_modules/.package-lock.json, newer than the lock file, when it is done).
$(CLIENT)/node_modules/.package-lock.json: $(CLIENT)/package-lock.json
	cd $(CLIENT) && npm ci --no-audit --no-fund

# dist: the npm package's tarball, bin/likes-client-<version>.tgz (npm pack of $(CLIENT)).
dist: js-test
	@mkdir -p $(BIN)
	cd $(CLIENT) && npm pack --silent --pack-destination $(abspath $(BIN))

fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

# contract-fuzz: the OpenAPI-driven fuzzer (e2e/contract) for 20,000 requests, before a release; make
# test runs 10,000 or 45 s of it.
contract-fuzz:
	./scripts/contract-fuzz.sh

run: build
	./scripts/run.sh

ramp: build
	./scripts/ramp.sh

# soak: 10 minutes of one node at half capacity with viewer churn; not part of CI (see
# docs/RELIABILITY.md).
soak: build
	./scripts/soak.sh

# images-offline: local stand-ins for the base images (and the Compose plugin and buildx when
# missing) on a machine whose Docker engine reaches no registry; see scripts/images-offline.sh.
images-offline:
	./scripts/images-offline.sh

# kube-offline: a single-node Kubernetes cluster on this machine, as root, with no registry: the
# binaries built once from the Go module proxy and cached in ~/.cache/likes/kube, the images
# imported from the local engine (after images-offline); see deploy/README.md. kube-down stops it
# and removes everything it made but the cache.
kube-offline:
	./scripts/kube-offline.sh

kube-down:
	./scripts/kube-down.sh

clean:
	rm -rf $(BIN) .run
