#!/usr/bin/env bash
# kube-offline.sh — `make kube-offline`: a single-node Kubernetes cluster on this machine, with
# no registry and no release download: the binaries built from the Go module proxy
# (scripts/kube/build.sh, cached outside the clone), etcd, containerd, runc and the CNI plugins
# from Debian, every image imported from the local Docker engine (scripts/kube/images.sh).
#
# It starts, as root: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd
# (a daemon of its own, apart from Docker's), the kubelet (CNI bridge likeskube0), kube-proxy
# (iptables), and CoreDNS, metrics-server and HAProxy Ingress in the cluster. It returns when the
# node is Ready and all three are available; then
#   export KUBECONFIG=/var/lib/likes-kube/admin.kubeconfig
# and kubectl (or $KUBE_CACHE/<version>/bin/kubectl, the same version) reaches it.
# `make kube-down` (scripts/kube-down.sh) stops it and removes what it made. Where things live:
# scripts/kube/lib.sh. Running it again on a running cluster only loads the images again.
#
# Environment: KUBE_VERSION (v1.34.2), COREDNS_VERSION, KUBE_CACHE (~/.cache/likes/kube),
# METRICS_SERVER_VERSION, HAPROXY_INGRESS_VERSION, DOCKER (the docker CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/kube/lib.sh
. scripts/kube/lib.sh
# shellcheck source=scripts/kube/pki.sh
. scripts/kube/pki.sh
# shellcheck source=scripts/kube/images.sh
. scripts/kube/images.sh
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
DOCKER=${DOCKER:-docker}
export PATH=$KUBE_BIN:$PATH:/usr/sbin:/sbin
export KUBECONFIG=$KUBECONFIG_ADMIN
start=$(date +%s)

[[ $(id -u) == 0 ]] || kube_die "run as root: the kubelet, containerd and the bridge need it"
for c in etcd containerd containerd-shim-runc-v2 ctr runc iptables openssl ip; do
  command -v "$c" >/dev/null || kube_die "$c missing: apt-get install etcd-server containerd runc containernetworking-plugins iptables openssl iproute2"
done
[[ -x /usr/lib/cni/bridge ]] || kube_die "CNI plugins missing: apt-get install containernetworking-plugins"
"$DOCKER" info >/dev/null 2>&1 || kube_die "no Docker engine answers ($DOCKER): the images come from it"

scripts/kube/build.sh
mkdir -p "$KUBE_STATE" "$KUBE_RUN" "$KUBE_LOGS"

# running NAME: whether the component's pid file names a live process.
running() { [[ -s $KUBE_RUN/$1.pid ]] && kill -0 "$(cat "$KUBE_RUN/$1.pid")" 2>/dev/null; }

# launch NAME COMMAND...: start a component in the background, its output in $KUBE_LOGS/NAME.log,
# its pid in $KUBE_RUN/NAME.pid; setsid, so that it outlives this script and a test's process
# group.
launch() {
  local name=$1
  shift
  running "$name" && return 0
  setsid "$@" >>"$KUBE_LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$KUBE_RUN/$name.pid"
}

# await WHAT SECONDS COMMAND...: retry COMMAND until it succeeds, or fail with the logs' tails.
await() {
  local what=$1 until=$(($(date +%s) + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if (($(date +%s) > until)); then
      kube_say "$what: not after $(($(date +%s) - start))s; the logs' last lines:"
      for f in "$KUBE_LOGS"/*.log; do
        echo "== $f" >&2
        tail -5 "$f" >&2
      done
      exit 1
    fi
    sleep 0.5
  done
  kube_say "$what ($(($(date +%s) - start))s)"
}

# put FILE: standard input into FILE, unless FILE holds it already: kube-proxy exits when its
# configuration file changes, even to the same content, so a second run must not touch it.
put() {
  local tmp
  tmp=$(mktemp)
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then
    rm -f "$tmp"
  else
    mv "$tmp" "$1"
    chmod 0644 "$1"
  fi
}

# The bridge exists before the API server, which listens on its address; the CNI plugin takes
# it over (isGateway) as the pods' gateway.
if ! ip link show "$KUBE_BRIDGE" >/dev/null 2>&1; then
  ip link add "$KUBE_BRIDGE" type bridge
  ip addr add "$KUBE_NODE_IP/24" dev "$KUBE_BRIDGE"
fi
ip link set "$KUBE_BRIDGE" up
kube_host_rules ADD
# Pods reach services on the same bridge only if bridged traffic passes iptables (kube-proxy's
# DNAT), and the node routes only with forwarding on.
modprobe br_netfilter 2>/dev/null || true
sysctl -qw net.bridge.bridge-nf-call-iptables=1 net.ipv4.ip_forward=1

kube_pki

launch etcd etcd --name likes-kube --data-dir "$KUBE_STATE/etcd" \
  --listen-client-urls "$KUBE_ETCD" --advertise-client-urls "$KUBE_ETCD" \
  --listen-peer-urls http://127.0.0.1:12380 --initial-advertise-peer-urls http://127.0.0.1:12380 \
  --initial-cluster likes-kube=http://127.0.0.1:12380
await "etcd answers" 30 curl -fsS "$KUBE_ETCD/health"

launch kube-apiserver kube-apiserver --advertise-address="$KUBE_NODE_IP" --bind-address="$KUBE_NODE_IP" \
  --secure-port=6443 --etcd-servers="$KUBE_ETCD" --service-cluster-ip-range="$KUBE_SERVICE_CIDR" \
  --client-ca-file="$KUBE_PKI/ca.crt" --tls-cert-file="$KUBE_PKI/apiserver.crt" \
  --tls-private-key-file="$KUBE_PKI/apiserver.key" \
  --kubelet-client-certificate="$KUBE_PKI/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$KUBE_PKI/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="$KUBE_PKI/ca.crt" \
  --service-account-key-file="$KUBE_PKI/sa.pub" --service-account-signing-key-file="$KUBE_PKI/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --allow-privileged=true \
  --requestheader-client-ca-file="$KUBE_PKI/front-proxy-ca.crt" \
  --requestheader-allowed-names=front-proxy-client --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --requestheader-group-headers=X-Remote-Group --requestheader-username-headers=X-Remote-User \
  --proxy-client-cert-file="$KUBE_PKI/front-proxy-client.crt" \
  --proxy-client-key-file="$KUBE_PKI/front-proxy-client.key" --enable-aggregator-routing=true \
  --kubelet-preferred-address-types=InternalIP
await "kube-apiserver is ready" 90 kubectl get --raw /readyz

launch kube-controller-manager kube-controller-manager --kubeconfig="$KUBE_STATE/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$KUBE_STATE/controller-manager.kubeconfig" \
  --authorization-kubeconfig="$KUBE_STATE/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
  --root-ca-file="$KUBE_PKI/ca.crt" --service-account-private-key-file="$KUBE_PKI/sa.key" \
  --cluster-signing-cert-file="$KUBE_PKI/ca.crt" --cluster-signing-key-file="$KUBE_PKI/ca.key" \
  --service-cluster-ip-range="$KUBE_SERVICE_CIDR"
launch kube-scheduler kube-scheduler --kubeconfig="$KUBE_STATE/scheduler.kubeconfig" \
  --authentication-kubeconfig="$KUBE_STATE/scheduler.kubeconfig" \
  --authorization-kubeconfig="$KUBE_STATE/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --leader-elect=false

# containerd: a daemon of the cluster's own (Docker's engine keeps its own), everything under
# KUBE_STATE and KUBE_RUN, the pods' network namespaces included (netns_mounts_under_state_dir),
# so that kube-down finds all of it.
put "$KUBE_STATE/containerd.toml" <<TOML
version = 2
root = "$KUBE_STATE/containerd"
state = "$KUBE_RUN/containerd"
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$CONTAINERD_SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$KUBE_STATE/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$KUBE_PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  # This machine is itself a container that may not lower an oom_score_adj: a Pod's sandbox
  # (-998) and the Guaranteed Pods (-997) would fail to start ("failed to update
  # /proc/self/oom_score_adj: Permission denied"); capped at containerd's own value instead.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$KUBE_RUN/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$KUBE_STATE/cni"
TOML
mkdir -p "$KUBE_STATE/cni"
put "$KUBE_STATE/cni/10-likes-kube.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "likes-kube",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$KUBE_BRIDGE",
      "isGateway": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$KUBE_STATE/cni-leases",
        "ranges": [[{"subnet": "$KUBE_POD_CIDR", "gateway": "$KUBE_NODE_IP"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
JSON
launch containerd containerd --config "$KUBE_STATE/containerd.toml"
await "containerd answers" 30 kube_ctr version
kube_images_build
kube_images_load

put "$KUBE_STATE/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $KUBE_NODE_IP
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $KUBE_PKI/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $KUBE_PKI/kubelet.crt
tlsPrivateKeyFile: $KUBE_PKI/kubelet.key
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
clusterDomain: cluster.local
clusterDNS: [$KUBE_DNS_IP]
resolvConf: /etc/resolv.conf
podLogsDir: $KUBE_STATE/pod-logs
# This machine is a container on cgroup v1: no QoS hierarchy of the kubelet's own (pods go under
# containerd's parent), no swap check, and cgroup v1 allowed (v1.34 still runs on it).
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
# The images are imported, never pulled: the kubelet must not collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
serializeImagePulls: false
# The fanout pods' listen backlog (deploy/helm/values-kube-offline.yaml sets it, the kube suite
# reads it back): namespaced, but not on the kubelet's safe list, so a kubelet refuses a Pod that
# asks for it (SysctlForbidden) unless allowed here, as an operator's nodes would have to.
allowedUnsafeSysctls: [net.core.somaxconn]
YAML
launch kubelet kubelet --config="$KUBE_STATE/kubelet.yaml" --kubeconfig="$KUBE_STATE/kubelet.kubeconfig" \
  --root-dir="$KUBE_STATE/kubelet" --hostname-override="$KUBE_NODE" --node-ip="$KUBE_NODE_IP"

put "$KUBE_STATE/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $KUBE_STATE/kube-proxy.kubeconfig}
hostnameOverride: $KUBE_NODE
mode: iptables
clusterCIDR: $KUBE_POD_CIDR
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# A container may not set the conntrack table's size; and NodePorts on 127.0.0.1 would need
# route_localnet, which no one here uses.
conntrack: {maxPerCore: 0}
iptables: {localhostNodePorts: false}
YAML
launch kube-proxy kube-proxy --config="$KUBE_STATE/kube-proxy.yaml"

await "node $KUBE_NODE is Ready" 120 kubectl wait --for=condition=Ready "node/$KUBE_NODE" --timeout=1s

# CoreDNS, with the kubeadm defaults (kubernetes plugin for cluster.local, forward to the node's
# resolver); its manifest is scripts/kube/coredns.yaml.
sed -e "s#@IMAGE@#$KUBE_COREDNS_IMAGE#" -e "s#@DNS_IP@#$KUBE_DNS_IP#" scripts/kube/coredns.yaml |
  kubectl apply --server-side -f - >/dev/null
# metrics-server, for the HPA's CPU and memory (scripts/kube/metrics-server.yaml).
sed -e "s#@IMAGE@#$KUBE_METRICS_SERVER_IMAGE#" scripts/kube/metrics-server.yaml |
  kubectl apply --server-side -f - >/dev/null
# HAProxy Ingress, the controller of the Ingresses' class haproxy (scripts/kube/haproxy-ingress.yaml).
sed -e "s#@IMAGE@#$KUBE_HAPROXY_INGRESS_IMAGE#" scripts/kube/haproxy-ingress.yaml |
  kubectl apply --server-side -f - >/dev/null
# Storage: the default StorageClass and a local volume per Redis data pod
# (scripts/kube/storage.yaml says why).
kubectl apply --server-side -f scripts/kube/storage.yaml >/dev/null
for n in 0 1 2; do
  mkdir -p "$KUBE_VOLUMES/vol-$n"
  sed -e "s#@N@#$n#" -e "s#@NODE@#$KUBE_NODE#" -e "s#@DIR@#$KUBE_VOLUMES/vol-$n#" scripts/kube/local-volume.yaml |
    kubectl apply --server-side -f - >/dev/null
done
await "CoreDNS is available" 120 kubectl -n kube-system wait --for=condition=Available deploy/coredns --timeout=1s
await "metrics-server is available" 120 kubectl -n kube-system wait --for=condition=Available deploy/metrics-server --timeout=1s
await "HAProxy Ingress is available" 120 kubectl -n haproxy-controller wait --for=condition=Available deploy/haproxy-ingress --timeout=1s
kube_say "up in $(($(date +%s) - start))s: export KUBECONFIG=$KUBECONFIG_ADMIN"
