#!/usr/bin/env bash
# kube-down.sh — `make kube-down`: stops the cluster scripts/kube-offline.sh started and removes
# what it made: its processes and containers, their mounts and network namespaces, the bridge,
# its firewall rules (its own, kube-proxy's and the kubelet's), and KUBE_STATE and KUBE_RUN. The
# binaries' cache (KUBE_CACHE) stays. Safe to run when nothing runs.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/kube/lib.sh
. scripts/kube/lib.sh
export PATH=$KUBE_BIN:$PATH:/usr/sbin:/sbin
[[ $(id -u) == 0 ]] || kube_die "run as root"

# stop NAME: SIGTERM, then SIGKILL after 10 s.
stop() {
  local pidfile=$KUBE_RUN/$1.pid pid
  [[ -s $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null
  fi
  rm -f "$pidfile"
}

# The kubelet first, so that it restarts nothing; then every container through containerd.
stop kubelet
if [[ -S $CONTAINERD_SOCK ]]; then
  for task in $(kube_ctr tasks ls -q 2>/dev/null); do
    kube_ctr tasks kill --signal SIGKILL "$task" >/dev/null 2>&1
  done
  for task in $(kube_ctr tasks ls -q 2>/dev/null); do
    for _ in $(seq 50); do
      kube_ctr tasks delete "$task" >/dev/null 2>&1 && break
      sleep 0.1
    done
  done
fi
for c in kube-proxy kube-scheduler kube-controller-manager kube-apiserver containerd etcd; do
  stop "$c"
done
# Shims left by a killed containerd (each holds one pod's containers).
pkill -9 -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" 2>/dev/null

# Mounts under the state directories (rootfs overlays, volumes, network namespaces), deepest
# first.
for dir in "$KUBE_RUN" "$KUBE_STATE"; do
  awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null
  done
done

# kube-proxy's chains (its --cleanup), then every KUBE-* chain left (the kubelet's canaries) and
# the script's own rules.
[[ -x $KUBE_BIN/kube-proxy ]] && kube-proxy --cleanup >/dev/null 2>&1
for ipt in iptables ip6tables; do
  for table in filter nat mangle; do
    "$ipt" -t "$table" -S 2>/dev/null | grep -E '^-A .*KUBE-' | sed 's/^-A/-D/' | while read -r rule; do
      eval "$ipt -t $table $rule" 2>/dev/null
    done
    "$ipt" -t "$table" -S 2>/dev/null | sed -n 's/^-N \(KUBE-[^ ]*\)$/\1/p' | while read -r chain; do
      "$ipt" -t "$table" -F "$chain" 2>/dev/null
    done
    "$ipt" -t "$table" -S 2>/dev/null | sed -n 's/^-N \(KUBE-[^ ]*\)$/\1/p' | while read -r chain; do
      "$ipt" -t "$table" -X "$chain" 2>/dev/null
    done
  done
done
kube_host_rules DEL
ip link del "$KUBE_BRIDGE" 2>/dev/null

rm -rf "$KUBE_RUN" "$KUBE_STATE"
kube_say "down: nothing of the cluster is left (the binaries stay cached in $KUBE_CACHE)"
