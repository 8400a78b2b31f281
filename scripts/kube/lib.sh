# shellcheck shell=bash
# lib.sh: what scripts/kube-offline.sh and scripts/kube-down.sh share: where the single-node
# cluster keeps its state, its addresses, and the helpers both use. Sourced, not run.
#
# Everything the cluster makes lives under three directories and one bridge, so that
# kube-down can remove all of it:
#   KUBE_STATE  /var/lib/likes-kube   certificates, kubeconfigs, etcd's data, containerd's
#               images and snapshots, the kubelet's root, pod logs, the CNI address leases
#   KUBE_RUN    /run/likes-kube       sockets, pid files, containerd's state and the pods'
#               network namespaces
#   KUBE_LOGS   $KUBE_STATE/log       one log per component
#   KUBE_VOLUMES $KUBE_STATE/volumes  the local volumes (Redis's data)
#   the bridge  likeskube0 (10.244.0.1/24): the node's address and every pod's gateway
# Services get 10.96.0.0/16 (the API at 10.96.0.1, DNS at 10.96.0.10), which kube-proxy's
# iptables rules answer on this machine only.
KUBE_VERSION=${KUBE_VERSION:-v1.34.2}
COREDNS_VERSION=${COREDNS_VERSION:-v1.12.1}
METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.8.0}
# The newest HAProxy Ingress the module proxy serves (it refuses v0.14.8 and later).
HAPROXY_INGRESS_VERSION=${HAPROXY_INGRESS_VERSION:-v0.14.7}
KUBE_CACHE=${KUBE_CACHE:-$HOME/.cache/likes/kube}
KUBE_BIN=$KUBE_CACHE/$KUBE_VERSION/bin
KUBE_STATE=${KUBE_STATE:-/var/lib/likes-kube}
KUBE_RUN=${KUBE_RUN:-/run/likes-kube}
KUBE_LOGS=$KUBE_STATE/log
KUBE_PKI=$KUBE_STATE/pki
KUBE_VOLUMES=$KUBE_STATE/volumes
KUBECONFIG_ADMIN=$KUBE_STATE/admin.kubeconfig
KUBE_NODE=likes-kube
KUBE_BRIDGE=likeskube0
KUBE_NODE_IP=10.244.0.1
KUBE_POD_CIDR=10.244.0.0/24
KUBE_SERVICE_CIDR=10.96.0.0/16
KUBE_API_SERVICE_IP=10.96.0.1
KUBE_DNS_IP=10.96.0.10
KUBE_API=https://$KUBE_NODE_IP:6443
# etcd on ports of its own: a developer's etcd on 2379 is left alone.
KUBE_ETCD=http://127.0.0.1:12379
CONTAINERD_SOCK=$KUBE_RUN/containerd/containerd.sock
# The local images the cluster needs that a kubelet would otherwise pull.
KUBE_PAUSE_IMAGE=docker.io/likes-kube/pause:local
KUBE_COREDNS_IMAGE=docker.io/likes-kube/coredns:$COREDNS_VERSION
KUBE_METRICS_SERVER_IMAGE=docker.io/likes-kube/metrics-server:$METRICS_SERVER_VERSION
KUBE_HAPROXY_INGRESS_IMAGE=docker.io/likes-kube/haproxy-ingress:$HAPROXY_INGRESS_VERSION

kube_say() { echo "kube: $*" >&2; }
kube_die() {
  kube_say "$*"
  exit 1
}

# kube_ctr runs containerd's client against the cluster's containerd, in the kubelet's namespace.
kube_ctr() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# kube_iptables_rule ACTION ARGS... adds (-A/-I) or deletes (-D) a rule of the script's own,
# idempotently: an add is skipped when the rule is there, a delete when it is not.
kube_iptables_rule() {
  local action=$1
  shift
  if iptables -C "$@" 2>/dev/null; then
    [[ $action == -D ]] && iptables -D "$@"
  else
    [[ $action != -D ]] && iptables "$action" "$@"
  fi
  return 0
}

# kube_host_rules ADD|DEL: the rules the cluster needs on this machine's firewall. Docker's
# engine sets the FORWARD policy to DROP, which drops pod traffic that the bridge routes
# (pod to pod through the host, pod to service after kube-proxy's DNAT); and pods reach the
# machine's resolver (CoreDNS forwards to it) only masqueraded as the node.
kube_host_rules() {
  local a=-I
  [[ $1 == DEL ]] && a=-D
  kube_iptables_rule "$a" FORWARD -i "$KUBE_BRIDGE" -m comment --comment likes-kube -j ACCEPT
  kube_iptables_rule "$a" FORWARD -o "$KUBE_BRIDGE" -m comment --comment likes-kube -j ACCEPT
  kube_iptables_rule "$a" POSTROUTING -t nat -s "$KUBE_POD_CIDR" ! -d "$KUBE_POD_CIDR" \
    -m comment --comment likes-kube -j MASQUERADE
}
