#!/bin/sh
# nemesis.sh runs the partition suite (deploy/partitiontest) and prints docs/RELIABILITY.md's
# partition table rows: fault | acknowledged likes lost | Fail answers applied |
# s without acknowledgements | linearizable.
#   scripts/nemesis.sh               each fault once, each on a cluster of its own (as `make test`)
#   scripts/nemesis.sh MINUTES [SEED] a seeded random sequence of the faults on one cluster for
#                                     MINUTES (the seed is printed; give it again to replay)
# Needs root, iproute2, iptables and redis-server.
set -eu
cd "$(dirname "$0")/.."
PATH=$PATH:/usr/local/go/bin
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if [ $# -ge 1 ]; then
  export LIKES_NEMESIS_MINUTES="$1"
  [ $# -ge 2 ] && export LIKES_NEMESIS_SEED="$2"
  run=TestRandomSchedule
  timeout=$(awk -v m="$1" 'BEGIN { printf "%dm", m + 10 }')
else
  run=TestPartitions
  timeout=10m
fi
LIKES_NEMESIS=1 go test -count=1 -timeout "$timeout" -run "^$run\$" -v ./deploy/partitiontest >"$out" 2>&1 || status=$?
grep -o 'nemesis-seed .*' "$out" || true
echo "| fault | acknowledged likes lost | Fail answers applied | s without acks | linearizable | notes |"
grep -o 'nemesis-row | .*' "$out" | sed 's/^nemesis-row //; s/$/ |/'
grep -E '^(---|ok|FAIL)|^\s+\S+_test.go:[0-9]+: .*(lost|linearizable)' "$out" | grep -v '^    ---' || true
exit "${status:-0}"
