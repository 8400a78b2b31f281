#!/usr/bin/env bash
# alone.sh — runs a benchmark alone on the machine, as docs/ require of every figure: it takes
# /tmp/likes-bench.lock exclusively (tests and builds that take it shared, `flock -s`, wait
# meanwhile; other benchmarks that take it wait too), then waits until the 1-minute load average
# is below ALONE_MAX_LOAD, prints the load beside the command, and runs the command with
# LIKES_BENCH_LOCK_HELD=1 so that the benchmark scripts do not try to take the lock again.
#
# Usage: scripts/alone.sh COMMAND [ARGS...]     e.g. scripts/alone.sh scripts/likecost.sh
# Environment (defaults): ALONE_MAX_LOAD (1), ALONE_WAIT (900: seconds to wait for the lock, and
# again for the load).
set -euo pipefail
max=${ALONE_MAX_LOAD:-1}
wait=${ALONE_WAIT:-900}
[[ $# -gt 0 ]] || { echo "usage: scripts/alone.sh COMMAND [ARGS...]" >&2; exit 2; }

exec 9>/tmp/likes-bench.lock
flock -w "$wait" 9 || { echo "alone: /tmp/likes-bench.lock still held after $wait s" >&2; exit 1; }
# shellcheck source=lib/load.sh
source "$(dirname "$0")/lib/load.sh"
quiet_load "$max" "$wait" || { echo "alone: not started" >&2; exit 1; }
echo "alone: load average $(cut -d' ' -f1-3 /proc/loadavg) at the start of: $*" >&2
LIKES_BENCH_LOCK_HELD=1 exec "$@"
