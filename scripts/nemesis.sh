#!/bin/sh
# nemesis.sh runs the partition suite (deploy/partitiontest) with the faults known to lose
# acknowledged likes included, and prints docs/RELIABILITY.md's partition table rows:
# fault | acknowledged likes lost | Fail answers applied | seconds without acknowledgements.
# Needs root, iproute2, iptables and redis-server.
set -eu
cd "$(dirname "$0")/.."
PATH=$PATH:/usr/local/go/bin
out=$(mktemp)
trap 'rm -f "$out"' EXIT
LIKES_NEMESIS=1 LIKES_NEMESIS_KNOWN=1 go test -count=1 -timeout 10m -v ./deploy/partitiontest >"$out" 2>&1 || status=$?
echo "| fault | acknowledged likes lost | Fail answers applied | s without acks | notes |"
grep -o 'nemesis-row | .*' "$out" | sed 's/^nemesis-row //; s/$/ |/'
grep -E '^(---|ok|FAIL)' "$out" | grep -v '^    ---' || true
exit "${status:-0}"
