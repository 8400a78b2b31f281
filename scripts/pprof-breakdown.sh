#!/usr/bin/env bash
# pprof-breakdown.sh — splits a writer-svc CPU profile by the component that spent it, for
# docs/BENCHMARKS.md ("Writer CPU per like: where it goes").
#
# Usage: scripts/pprof-breakdown.sh BINARY PROFILE
#
# Each sample goes to the first component found walking its stack from the leaf up, so a syscall
# or an allocation counts for whoever made it (a write(2) under go-redis is go-redis, under
# net/http's response is HTTP). Standard-library plumbing (runtime, syscall, bufio, net, sync,
# context, time, ...) is passed over. Components:
#   go-redis    github.com/redis/go-redis
#   zap         go.uber.org/zap
#   prometheus  client_golang, and serve.RequestMetrics with the chi route lookup it makes
#   chi         github.com/go-chi (routing, middleware chaining)
#   json        encoding/json (the reply body)
#   likes       our own code: handler, identity, coalescer, store
#   http        net/http and net/textproto: reading requests, writing responses, connections
#   gc          the garbage collector's own goroutines
#   runtime     anything else: the scheduler, timers, netpoll with no caller of ours
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 BINARY PROFILE" >&2; exit 2; }
go tool pprof -traces "$1" "$2" 2>/dev/null | awk '
function component(fn) {
  if (fn ~ /github\.com\/redis\/go-redis/) return "go-redis"
  if (fn ~ /go\.uber\.org\/zap/) return "zap"
  if (fn ~ /github\.com\/prometheus\// || fn ~ /RequestMetrics/ || fn ~ /chi\/v5\.\(\*Context\)\.RoutePattern/) return "prometheus"
  if (fn ~ /github\.com\/go-chi\//) return "chi"
  if (fn ~ /^encoding\/json\./) return "json"
  if (fn ~ /github\.com\/likes\/likes\//) return "likes"
  if (fn ~ /^net\/http\./ || fn ~ /^net\/textproto\./) return "http"
  if (fn ~ /^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge)/) return "gc"
  return ""
}
function flush() {
  if (value > 0) { if (owner == "") owner = fallback; if (owner == "") owner = "runtime"; sum[owner] += value; total += value }
  value = 0; owner = ""; fallback = ""
}
/^-----------\+/ { flush(); next }
{
  line = $0
  if (match(line, /^ +[0-9.]+(ms|s|us|ns|min) +/)) {
    v = substr(line, RSTART, RLENGTH); gsub(/ /, "", v)
    if (v ~ /ms$/) value = substr(v, 1, length(v) - 2) / 1000
    else if (v ~ /us$/) value = substr(v, 1, length(v) - 2) / 1e6
    else if (v ~ /ns$/) value = substr(v, 1, length(v) - 2) / 1e9
    else if (v ~ /min$/) value = substr(v, 1, length(v) - 3) * 60
    else value = substr(v, 1, length(v) - 1)
    line = substr(line, RLENGTH + 1)
  }
  gsub(/^ +| +$/, "", line)
  if (line == "" || value == 0) next
  c = component(line)
  if (c == "gc") { fallback = "gc"; next }
  if (owner == "" && c != "") owner = c
}
END {
  flush()
  if (total == 0) { print "no samples" > "/dev/stderr"; exit 1 }
  n = split("http chi prometheus zap json likes go-redis gc runtime", order, " ")
  printf "%-11s %8s %6s\n", "component", "cpu s", "%"
  for (i = 1; i <= n; i++) printf "%-11s %8.2f %5.1f%%\n", order[i], sum[order[i]], 100 * sum[order[i]] / total
  printf "%-11s %8.2f\n", "total", total
}'
