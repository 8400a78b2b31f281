#!/usr/bin/env bash
# contract-fuzz.sh — the long run of the API contract fuzzer (e2e/contract) before a release: CHECKS
# (20,000) requests drawn from the OpenAPI documents (pkg/openapi), most with a hostile parameter,
# against a real writer-svc and fanout-svc (built with -race) on a real redis-server, each reply held
# to the document; then the services' RSS and Redis's used_memory against their bounds. `make test`
# runs the same test briefly (a 45 s budget).
#
# Usage: scripts/contract-fuzz.sh [go test flags...]
#   scripts/contract-fuzz.sh                          a fresh seed (printed first)
#   scripts/contract-fuzz.sh -rapid.seed=N            repeat a run, or replay a failing draw: rapid
#                                                     prints "-rapid.seed=N" for it
#   scripts/contract-fuzz.sh -contract.collect        go on past violations, list each once at the end
#   scripts/contract-fuzz.sh -contract.ops=timeline   only the operations matching the expression
# Environment (defaults): CHECKS (20000), TIMEOUT (5s, one reply), GO (go), RACE (1: -race; 0: off,
# about three times as many requests a second).
# Exit status: 0 when every reply conformed and memory came back within bounds, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
CHECKS=${CHECKS:-20000}
TIMEOUT=${TIMEOUT:-5s}
race=()
if [ "${RACE:-1}" = 1 ]; then race=(-race); fi
exec "$GO" test "${race[@]}" -count=1 -timeout 4h -v -run '^TestContractFuzz$' ./e2e/contract \
  -rapid.checks="$CHECKS" -contract.budget=0 -contract.timeout="$TIMEOUT" "$@"
