#!/usr/bin/env bash
# million.sh — a million viewers on this one machine, clients included, as an operator planning
# a million-viewer event would measure it: NODES fanout-svc processes share CPU 0 (a process here
# may hold 20,000 open files: at most 18,000 viewers a node, 56 nodes for 1,000,000); redis-server,
# writer-svc and loadgen (its epoll workers, LOADGEN_PER_WORKER viewers each, from source
# addresses spread over 127.0.0.0/8) share CPU 1; everything through scripts/ramp.sh. POSTS
# posts of CONNS/POSTS viewers each (1,000 posts of 1,000 viewers).
#
# One `loadgen ramp` holds the viewers throughout: it connects CONNS at LOADGEN_MAX_CONNECT_RATE
# (the connect ramp: connects/s, node CPU per connect, the nodes' RSS per viewer), then runs its
# steps at that hold (--until-break --grow rate, with an objective no step can break, so every
# step runs): the first at a rate that sends no like in WARMUP + WINDOW (the idle cost: heartbeats,
# "watching now" and timers, in % of the nodes' core over WINDOW), the last two at PHASE_EVENTS
# events/s (likes spread over all posts: delivery %, p99). The steps between (the grown rates,
# x2.5 each, a few seconds each) are in the ramp's own table and CSV, not in this one. Kernel
# memory per viewer is /proc/meminfo's Slab and SUnreclaim and /proc/net/sockstat's TCP memory,
# read before the ramp and at the hold (after the idle step), over the viewers open; both ends of
# every socket are on this machine, so the per-end figure is an estimate: half of it. loadgen's
# memory per viewer is its own figure at the end of the idle step (the ramp's CSV,
# generator_mem_per_viewer_b: its workers' private resident memory plus the coordinator's whole
# RSS, over the viewers open; each page of the program, shared by all workers, counts once). Free
# memory is MemAvailable before the ramp and at the hold.
#
# KILL_NODE=1 loses a node in the idle step: `kill -9` of the last node KILL_AFTER into the step's
# window; its viewers (17,000 at a million: the last of 56) reconnect at once to the others, as a
# balancer would send them (loadgen ramp --kill-cmd), and the table adds the node loss: viewers
# moved, admitted, refused, failed, and the ms from the first stream's end until every admitted
# one had its post's count (the node's snapshot). The idle rows then hold the reconnects too, so the table shows them as
# "-": the idle cost comes from a run without KILL_NODE; the later steps' nodes' CPU is "-" too
# (the ramp no longer reads the lost node's).
#
# ONE_LIKE=1 likes the first post once after the load phases, every viewer still open (loadgen
# ramp --one-like), and the table adds: that post's viewers (CONNS/POSTS: POSTS=10 makes 10 posts
# of 100,000 at a million), how many got the frame, the like's answer, and the ms from Redis's
# store of it until the last of them had it (p50, p99 too); and how many viewers of all posts were
# current then. The viewers get ONE_LIKE_WAIT (10s) to show it.
#
# WRITE_PROBE=R (likes/s) isolates the write path (loadgen ramp --write-probe): R likes/s to posts
# no viewer watches, for a window before any viewer connects and beside each step's likes; the
# table adds the probe alone (likes/s acknowledged, like p99, likes per writer CPU-second, Redis
# us per like) and beside the load phases, every viewer fed (the same, the phase's own likes
# counted in the per-CPU figure).
#
# Prints ONE table (one column per run, then their median), also written to MILLION_DIR/table.txt;
# each run's ramp (logs, ramp.txt, ramp.csv) is under MILLION_DIR/run-N. Holds
# /tmp/likes-bench.lock throughout (or runs under scripts/alone.sh). Everything it starts is
# stopped when it exits, on failure too; sockets in TIME_WAIT are awaited before each run.
#
# Usage: scripts/million.sh                e.g. scripts/alone.sh scripts/million.sh
#        CONNS=100000 POSTS=100 scripts/million.sh
# Environment (defaults): CONNS (1000000), POSTS (1000), NODES (CONNS / 18,000, rounded up),
# RUNS (1), PHASE_EVENTS ("20000 50000": two increasing rates of events/s), WARMUP (3s),
# WINDOW (10s), KILL_NODE (0), KILL_AFTER (2s), ONE_LIKE (0), ONE_LIKE_WAIT (10s),
# WRITE_PROBE (0), LOADGEN_PER_WORKER (15000: CONNS / it workers),
# LOADGEN_MAX_CONNECT_RATE (5000), REDIS_NICE (-10), WRITER_NICE (-5), GEN_NICE (10: loadgen),
# LOADGEN_SOURCES (127.0.0.2-127.0.0.250), QUIET_WAIT (120: most seconds to await TIME_WAIT),
# MAX_LOAD (ALONE_MAX_LOAD or 1: the 1-minute load average each run after the first waits to be
# below, as scripts/alone.sh does for the first), LOAD_WAIT (900: most seconds to wait for it),
# MILLION_DIR (.run/million), and anything scripts/ramp.sh takes (BIN, RAMP_PORT_BASE, ...).
set -euo pipefail

cd "$(dirname "$0")/.."
CONNS=${CONNS:-1000000}
POSTS=${POSTS:-1000}
NODES=${NODES:-$(((CONNS + 17999) / 18000))}
RUNS=${RUNS:-1}
PHASE_EVENTS=${PHASE_EVENTS:-20000 50000}
WARMUP=${WARMUP:-3s}
WINDOW=${WINDOW:-10s}
QUIET_WAIT=${QUIET_WAIT:-120}
MAX_LOAD=${MAX_LOAD:-${ALONE_MAX_LOAD:-1}}
LOAD_WAIT=${LOAD_WAIT:-900}
OUT=${MILLION_DIR:-.run/million}
KILL_NODE=${KILL_NODE:-0}
KILL_AFTER=${KILL_AFTER:-2s}
ONE_LIKE=${ONE_LIKE:-0}
ONE_LIKE_WAIT=${ONE_LIKE_WAIT:-10s}
WRITE_PROBE=${WRITE_PROBE:-0}
BIN=${BIN:-bin}
export LOADGEN_PER_WORKER=${LOADGEN_PER_WORKER:-15000}
export LOADGEN_MAX_CONNECT_RATE=${LOADGEN_MAX_CONNECT_RATE:-5000}
export LOADGEN_SOURCES=${LOADGEN_SOURCES:-127.0.0.2-127.0.0.250}
# CPU 1's priorities: Redis and the writer before the tens of loadgen workers that share it (at
# one priority, Redis starved and the nodes' probes of it timed out: they refused new streams).
export REDIS_NICE=${REDIS_NICE:--10} WRITER_NICE=${WRITER_NICE:--5} GEN_NICE=${GEN_NICE:-10}
for b in writer-svc fanout-svc loadgen; do
  [[ -x $BIN/$b ]] || { echo "million: $BIN/$b missing: run make build first" >&2; exit 1; }
done
read -r -a events <<<"$PHASE_EVENTS"
((${#events[@]} == 2 && events[1] > events[0] && events[0] > 0)) ||
  { echo "million: PHASE_EVENTS must be two increasing rates of events/s, not \"$PHASE_EVENTS\"" >&2; exit 1; }
mkdir -p "$OUT"

if [[ -z ${LIKES_BENCH_LOCK_HELD:-} ]]; then # scripts/alone.sh holds it already
  exec 9>/tmp/likes-bench.lock
  flock 9
  export LIKES_BENCH_LOCK_HELD=1
fi
# shellcheck source=lib/sockets.sh
source scripts/lib/sockets.sh
# shellcheck source=lib/load.sh
source scripts/lib/load.sh

# seconds DURATION: a Go duration of ms, s or m in seconds.
seconds() { awk -v d="$1" 'BEGIN { u = d; sub(/^[0-9.]+/, "", u); v = d + 0; print (u == "ms" ? v / 1000 : u == "m" ? v * 60 : v) }'; }

# The steps' rates in likes/s (a post has CONNS/POSTS viewers): the load phases' r1 and r2 =
# r1 x factor, and the idle step's r1 / factor^k with k the fewest steps down at which the idle
# step's warmup and window fall due less than half a like (loadgen sends int(rate x elapsed)).
read -r r1 factor k idle_rate < <(awk -v e1="${events[0]}" -v e2="${events[1]}" -v c="$CONNS" -v p="$POSTS" \
  -v dur="$(awk -v a="$(seconds "$WARMUP")" -v b="$(seconds "$WINDOW")" 'BEGIN { print a + b }')" 'BEGIN {
    r1 = e1 * p / c; f = e2 / e1; k = 1; r0 = r1 / f
    while (r0 * dur >= 0.5) { k++; r0 /= f }
    printf "%.10g %.10g %d %.10g\n", r1, f, k, r0 }')
steps=$((k + 2))
workers=$(((CONNS + LOADGEN_PER_WORKER - 1) / LOADGEN_PER_WORKER))

# ramp_pgid is the running ramp's process group (ramp.sh, its stack, loadgen and its workers).
ramp_pgid=""
# stop_ramp: TERM the ramp's process group (ramp.sh stops its stack, loadgen its workers), up to
# 10 s for them to go, then KILL what is left.
stop_ramp() {
  [[ -n $ramp_pgid ]] || return 0
  kill -TERM -- "-$ramp_pgid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 -- "-$ramp_pgid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$ramp_pgid" 2>/dev/null || true
  wait "$ramp_pgid" 2>/dev/null || true
  ramp_pgid=""
}
# Connection tracking: where netfilter's conntrack is loaded (a Docker engine or Kubernetes on the
# host loads it), every loopback connection takes an entry, and once nf_conntrack_max entries
# (262,144 by default here) are taken the kernel drops new SYNs ("nf_conntrack: table full,
# dropping packet" in dmesg): a 300,000-viewer run stopped at 261,784 open, and the writer and
# the nodes' /metrics then timed out too. The run marks loopback traffic untracked in the raw
# table (rules tagged likes-million, removed when it exits, and any left by a killed run removed
# before it starts) rather than raising the table to two million entries (kernel memory of
# their own, counted in no viewer). deploy/host-tuning.md says the same for a host.
# notrack -I|-D CHAIN -i|-o: insert or delete one chain's rule.
notrack() { iptables -t raw "$1" "$2" "$3" lo -m comment --comment likes-million -j CT --notrack 2>/dev/null; }
untracked=""
retrack_loopback() { # every rule of ours, each chain on its own (a half-made pair included)
  while notrack -D PREROUTING -i; do :; done
  while notrack -D OUTPUT -o; do :; done
}
untrack_loopback() {
  [[ -r /proc/sys/net/netfilter/nf_conntrack_max ]] || return 0 # no conntrack loaded: nothing tracks
  retrack_loopback                                               # a killed run's
  local max
  max=$(cat /proc/sys/net/netfilter/nf_conntrack_max)
  ((CONNS + 1000 > max)) || return 0
  untracked=1 # before inserting: the exit removes whatever was made
  if notrack -I PREROUTING -i && notrack -I OUTPUT -o; then
    echo "million: loopback untracked by conntrack for the run (nf_conntrack_max $max)" >&2
  else
    echo "million: conntrack holds $max connections, fewer than CONNS, and iptables could not untrack loopback (root and iptables needed): the run will stop there" >&2
  fi
}
trap 'code=$?; trap - EXIT INT TERM; stop_ramp; [[ -z $untracked ]] || retrack_loopback; exit $code' EXIT INT TERM
untrack_loopback

# kernel: "slab_kib sunreclaim_kib tcp_mem_pages avail_kib" now.
kernel() {
  awk '$1 == "Slab:" { s = $2 } $1 == "SUnreclaim:" { u = $2 } $1 == "MemAvailable:" { a = $2 }
    END { printf "%s %s ", s, u; while ((getline l < "/proc/net/sockstat") > 0) { n = split(l, f, " ");
      if (f[1] == "TCP:") for (i = 2; i < n; i++) if (f[i] == "mem") m = f[i + 1] }
      printf "%s %s\n", m, a }' /proc/meminfo
}

# run N: one ramp to CONNS with its steps; writes the run's figures, "name<TAB>value" a line, to
# OUT/run-N.tsv.
run() {
  local dir="$OUT/run-$1" before hold="" load
  rm -rf "$dir"
  mkdir -p "$dir"
  quiet_sockets "$QUIET_WAIT"
  # A later run waits, like the first under scripts/alone.sh, for the load of the one before
  # (tearing down a million sockets) to fall below MAX_LOAD: its figures are then a run alone too.
  if (($1 > 1)); then
    quiet_load "$MAX_LOAD" "$LOAD_WAIT" || { echo "million: run $1 not started" >&2; exit 1; }
  fi
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  before=$(kernel)
  local extra=() # the node loss (the last node, whose pid file ramp.sh writes), the one like, the probe
  if ((KILL_NODE)); then extra=(--kill-cmd "kill -9 \$(cat $dir/fanout-$((NODES - 1)).pid)" --kill-after "$KILL_AFTER"); fi
  if ((ONE_LIKE)); then extra+=(--one-like --converge-timeout "$ONE_LIKE_WAIT"); fi
  if [[ $WRITE_PROBE != 0 ]]; then extra+=(--write-probe "$WRITE_PROBE"); fi
  # setsid: the ramp in a process group of its own, which stop_ramp ends as a whole.
  FANOUT_NODES=$NODES RAMP_DIR="$dir" LOADGEN_POST_PREFIX="m$(date +%s)r$1" BIN=$BIN \
    setsid scripts/ramp.sh --conns "$CONNS" --posts "$POSTS" --until-break --grow rate \
    --rate "$idle_rate" --grow-factor "$factor" --max-steps "$steps" --max-time 24h --slo 'errors>=0' \
    --warmup "$WARMUP" --window "$WINDOW" "${extra[@]}" >"$dir/ramp.txt" 2>"$dir/ramp.log" &
  ramp_pgid=$!
  # The hold: once the idle step is done, the viewers stay open through the steps that follow.
  while kill -0 "$ramp_pgid" 2>/dev/null; do
    if grep -Eqs '^step 1/[0-9]+ \(.*\): (clean|broke)' "$dir/ramp.log"; then
      hold=$(kernel)
      break
    fi
    sleep 0.2
  done
  local code=0
  wait "$ramp_pgid" || code=$?
  ramp_pgid=""
  ((code == 0)) || { echo "million: run $1: ramp.sh failed ($code), see $dir/ramp.log" >&2; tail -n 20 "$dir/ramp.log" >&2; exit 1; }
  [[ -n $hold ]] || { echo "million: run $1: the ramp ended before its idle step did, see $dir/ramp.log" >&2; exit 1; }
  # The figures by column name, from the ramp's CSV (loadgen/internal/report/columns.go): data
  # row 1 the idle step, rows k+1 and k+2 the load phases; the node loss, the one like and the
  # probe alone from the ramp's text (the last two's lines read with every comma dropped).
  awk -F, -v k="$k" -v steps="$steps" -v load="${load// //}" -v before="$before" -v hold="$hold" \
    -v e1="${events[0]}" -v e2="${events[1]}" -v nodes="$NODES" -v kill="$KILL_NODE" \
    -v one="$(tr -d , <"$dir/ramp.txt" | sed -nE 's/^one like to post [^ ]+ \(([0-9]+) viewers\): delivered to ([0-9]+); answered in ([0-9.]+|-) ms; the last viewer had it ([0-9]+|-) ms after Redis stored it \(p50 ([0-9]+|-) ms p99 ([0-9]+|-) ms\); ([0-9]+) of ([0-9]+) viewers.*/\1 \2 \3 \4 \5 \6 \7 \8/p' | head -n 1)" -v onelike="$ONE_LIKE" \
    -v alone="$(tr -d , <"$dir/ramp.txt" | sed -nE 's/^write probe alone .*: [0-9.]+ likes\/s offered ([0-9]+) acknowledged \(([0-9]+) failed\) like p99 ([0-9.]+|-) ms; writer CPU ([0-9]+|-)% ([0-9]+|-) likes per writer CPU-second; Redis ([0-9.]+|-) us per like.*/\1 \2 \3 \4 \5 \6/p' | head -n 1)" -v probe="$WRITE_PROBE" \
    -v storm="$(sed -nE 's/.*node loss .* into the window: ([0-9]+) viewers moved, ([0-9]+) admitted by the other nodes \(([0-9]+) refused, ([0-9]+) failed\); every admitted one current ([0-9]+|NaN) ms.*/\1 \2 \3 \4 \5/p' "$dir/ramp.txt" | head -n 1)" '
    function out(name, v) { printf "%s\t%s\n", name, v }
    function num(v) { return v != "" && v != "-" && v !~ /NaN/ }
    function per(bytes, n) { return n > 0 ? sprintf("%.0f", bytes / n) + 0 : "-" } # + 0: no "-0"
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { rows = NR - 1; for (i = 1; i <= NF; i++) cell[rows, i] = $i }
    END {
      open = cell[1, col["conns_open"]]
      split(before, b, " "); split(hold, h, " ")
      out("load average at start (1/5/15 min)", load)
      out("viewers wanted", cell[1, col["conns_wanted"]])
      out("viewers open", open)
      out("viewers failed", cell[1, col["conns_failed"]])
      out("viewers refused", cell[1, col["conns_refused"]])
      out("viewers dropped (all steps)", 0 + cell[1, col["conns_dropped"]] + (rows >= steps ? cell[steps - 1, col["conns_dropped"]] + cell[steps, col["conns_dropped"]] : 0))
      ms = cell[1, col["connect_ms"]]
      out("connect ramp s", sprintf("%.1f", ms / 1000))
      out("connects/s", ms > 0 ? sprintf("%.0f", open / (ms / 1000)) : "-")
      out("node CPU per connect us", cell[1, col["connect_node_cpu_us"]])
      out("nodes RSS per viewer B (above 0 viewers)", num(cell[1, col["mem_per_conn_idle_kib"]]) ? sprintf("%.0f", cell[1, col["mem_per_conn_idle_kib"]] * 1024) : "-")
      for (n = 1; n <= nodes; n++) if (("node" n "_rss_bytes") in col) rss += cell[1, col["node" n "_rss_bytes"]]
      out("nodes RSS MiB (whole)", sprintf("%.0f", rss / 1048576))
      lg = cell[1, col["generator_mem_per_viewer_b"]]
      out("loadgen memory per viewer B", lg)
      out("loadgen memory MiB", num(lg) ? sprintf("%.0f", lg * open / 1048576) : "-")
      slab = (h[1] - b[1]) * 1024; unrec = (h[2] - b[2]) * 1024; tcp = (h[3] - b[3]) * 4096
      out("kernel Slab per viewer B (both ends)", per(slab, open))
      out("kernel SUnreclaim per viewer B (both ends)", per(unrec, open))
      out("kernel TCP mem per viewer B (both ends)", per(tcp, open))
      out("kernel per socket end B (Slab+TCP)/2, est.", per((slab + tcp) / 2, open))
      out("MemAvailable before the ramp GiB", sprintf("%.2f", b[4] / 1048576))
      out("MemAvailable at hold GiB", sprintf("%.2f", h[4] / 1048576))
      idle = kill ? "-" : cell[1, col["nodes_cpu_pct"]] # a node loss in the idle step: its reconnects
      out("idle: nodes CPU % of a core", idle)
      out("idle: nodes CPU us per viewer-second", num(idle) && open > 0 ? sprintf("%.3f", idle / 100 / open * 1e6) : "-")
      if (kill) {
        n = split(storm, s, " ")
        out("node loss: viewers moved", n == 5 ? s[1] : "-")
        out("node loss: admitted elsewhere", n == 5 ? s[2] : "-")
        out("node loss: refused", n == 5 ? s[3] : "-")
        out("node loss: failed", n == 5 ? s[4] : "-")
        out("node loss: ms until every moved viewer current", n == 5 && s[5] != "NaN" ? s[5] : "-")
      }
      if (onelike) {
        n = split(one, o, " ")
        out("one like: viewers of the post", n == 8 ? o[1] : "-")
        out("one like: delivered", n == 8 ? o[2] : "-")
        out("one like: answered ms", n == 8 ? o[3] : "-")
        out("one like: ms until the last viewer had it", n == 8 ? o[4] : "-")
        out("one like: p50 ms", n == 8 ? o[5] : "-")
        out("one like: p99 ms", n == 8 ? o[6] : "-")
        out("one like: viewers current (all posts)", n == 8 ? o[7] : "-")
      }
      if (probe != 0) {
        n = split(alone, a, " ")
        out("write probe alone: likes/s", n == 6 ? a[1] : "-")
        out("write probe alone: failed", n == 6 ? a[2] : "-")
        out("write probe alone: like p99 ms", n == 6 ? a[3] : "-")
        out("write probe alone: writer CPU %", n == 6 ? a[4] : "-")
        out("write probe alone: likes per writer CPU-s", n == 6 ? a[5] : "-")
        out("write probe alone: Redis us per like", n == 6 ? a[6] : "-")
      }
      split(e1 " " e2, ev, " ")
      for (j = 1; j <= 2; j++) {
        r = k + j; ok = rows >= r
        out(ev[j] " ev/s: events/s measured", ok ? cell[r, col["events_per_sec"]] : "-")
        out(ev[j] " ev/s: delivery %", ok ? cell[r, col["delivery_pct"]] : "-")
        out(ev[j] " ev/s: p99 ms", ok ? cell[r, col["latency_p99_ms"]] : "-")
        out(ev[j] " ev/s: nodes CPU %", ok ? cell[r, col["nodes_cpu_pct"]] : "-")
        out(ev[j] " ev/s: generator saturated", ok ? cell[r, col["generator_saturated"]] : "-")
        if (probe != 0) {
          out(ev[j] " ev/s: write probe likes/s", ok ? cell[r, col["write_probe_likes_per_sec"]] : "-")
          out(ev[j] " ev/s: write probe like p99 ms", ok ? cell[r, col["write_probe_like_p99_ms"]] : "-")
          out(ev[j] " ev/s: writer CPU %", ok ? cell[r, col["writer_cpu_pct"]] : "-")
          out(ev[j] " ev/s: likes per writer CPU-s", ok ? cell[r, col["likes_per_writer_cpu_sec"]] : "-")
          out(ev[j] " ev/s: Redis us per like", ok ? cell[r, col["redis_us_per_like"]] : "-")
        }
      }
    }' "$dir/ramp.csv" >"$OUT/run-$1.tsv"
}

echo "million: CONNS=$CONNS POSTS=$POSTS NODES=$NODES (fanout-svc on CPU 0), $workers loadgen workers of $LOADGEN_PER_WORKER," \
  "connect rate $LOADGEN_MAX_CONNECT_RATE/s, sources $LOADGEN_SOURCES; steps at $idle_rate (idle) x$factor up to ${events[*]} events/s" \
  "($r1 likes/s and up), WARMUP $WARMUP, WINDOW $WINDOW; output under $OUT" >&2
for n in $(seq "$RUNS"); do run "$n"; done

# The table: a row per figure, a column per run, then the median over the runs.
files=()
for n in $(seq "$RUNS"); do files+=("$OUT/run-$n.tsv"); done
awk -F'\t' -v runs="$RUNS" '
  FNR == 1 { f++ }
  { if (f == 1) name[++rows] = $1; v[FNR, f] = $2 }
  END {
    head = sprintf("%-46s", "figure"); for (r = 1; r <= runs; r++) head = head sprintf(" %14s", "run " r)
    if (runs > 1) head = head sprintf(" %14s", "median"); print head
    for (i = 1; i <= rows; i++) {
      line = sprintf("%-46s", name[i]); m = 0; numeric = 1
      for (r = 1; r <= runs; r++) { line = line sprintf(" %14s", v[i, r]); if (v[i, r] !~ /^-?[0-9.]+$/) numeric = 0; else x[++m] = v[i, r] + 0 }
      if (runs > 1) {
        if (numeric) { for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (x[b] < x[a]) { t = x[a]; x[a] = x[b]; x[b] = t }
          med = x[int((m + 1) / 2)] } else med = "-"
        line = line sprintf(" %14s", med)
      }
      print line
    }
  }' "${files[@]}" | tee "$OUT/table.txt"
