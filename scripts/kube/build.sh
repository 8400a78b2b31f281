#!/usr/bin/env bash
# build.sh: the programs the single-node cluster runs that no Debian package holds, built from
# the Go module proxy once per version into $KUBE_CACHE (default ~/.cache/likes/kube): outside
# the clone, so a machine builds them once, not once per checkout. No release download is
# reachable here; the module proxy is.
#
#   $KUBE_CACHE/$KUBE_VERSION/bin   kube-apiserver, kube-controller-manager, kube-scheduler,
#                                   kubelet, kube-proxy, and a kubectl of the same version
#   $KUBE_CACHE/coredns-$COREDNS_VERSION/coredns   the cluster's DNS (its image is made from it)
#   $KUBE_CACHE/metrics-server-$METRICS_SERVER_VERSION/metrics-server   the resource metrics the
#                                   HPA reads (likewise)
#   $KUBE_CACHE/haproxy-ingress-$HAPROXY_INGRESS_VERSION/haproxy-ingress, and beside it rootfs/
#                                   (the module's templates, Lua scripts and start.sh): the
#                                   Ingress controller of the public routes (images.sh)
#
# Kubernetes: the k8s.io/kubernetes module zip has no staging/ tree, so its go.mod's
# `=> ./staging/src/...` replaces (and its go.work) point at nothing: they are dropped and the
# 31 staging modules required at their published versions (v0.X.Y for Kubernetes v1.X.Y).
set -euo pipefail
# shellcheck source=scripts/kube/lib.sh
. "$(dirname "$0")/lib.sh"
GO=${GO:-go}
export GOWORK=off CGO_ENABLED=0

# module_dir MODULE@VERSION: the module's directory in the module cache, downloaded if need be.
module_dir() {
  local dir
  dir=$("$GO" mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d $dir ]] || kube_die "go mod download $1 gave no directory"
  echo "$dir"
}

build_kube() {
  local cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
  local missing=() c src staging start
  for c in "${cmds[@]}"; do [[ -x $KUBE_BIN/$c ]] || missing+=("$c"); done
  if ((${#missing[@]} == 0)); then
    kube_say "Kubernetes $KUBE_VERSION cached in $KUBE_BIN"
    return
  fi
  start=$(date +%s)
  kube_say "building ${missing[*]} $KUBE_VERSION into $KUBE_BIN (about 10 minutes on 2 cores, once)"
  staging=v0.${KUBE_VERSION#v1.}
  src=$KUBE_CACHE/$KUBE_VERSION/src
  rm -rf "$src"
  mkdir -p "$KUBE_BIN"
  cp -r "$(module_dir "k8s.io/kubernetes@$KUBE_VERSION")" "$src"
  chmod -R u+w "$src"
  (
    cd "$src"
    rm -f go.work go.work.sum
    sed -i -e '/=> \.\/staging\/src\//d' -e "s#^\(\tk8s.io/[a-z0-9-]*\) v0\.0\.0\$#\1 $staging#" go.mod
    # go.sum lacks the published staging modules' sums: -mod=mod lets the go command add them.
    for c in "${missing[@]}"; do
      GOFLAGS=-mod=mod "$GO" build -trimpath -ldflags "-s -w \
        -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION \
        -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION" -o "$KUBE_BIN/$c.tmp" "./cmd/$c"
      mv "$KUBE_BIN/$c.tmp" "$KUBE_BIN/$c"
    done
  )
  rm -rf "$src"
  kube_say "built ${missing[*]} in $(($(date +%s) - start))s"
}

# build_program NAME VERSION MODULE PACKAGE: a program of another module, built in the module's
# own directory (its go.mod and go.sum, as its authors build it) into $KUBE_CACHE/NAME-VERSION.
build_program() {
  local name=$1 version=$2 module=$3 pkg=$4 out=$KUBE_CACHE/$1-$2 start
  if [[ -x $out/$name ]]; then
    kube_say "$name $version cached in $out"
    return
  fi
  start=$(date +%s)
  kube_say "building $name $version into $out (once)"
  mkdir -p "$out"
  (cd "$(module_dir "$module@$version")" && "$GO" build -trimpath -ldflags "-s -w" -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
  kube_say "built $name in $(($(date +%s) - start))s"
}

build_kube
build_program coredns "$COREDNS_VERSION" github.com/coredns/coredns .
build_program metrics-server "$METRICS_SERVER_VERSION" sigs.k8s.io/metrics-server ./cmd/metrics-server
build_program haproxy-ingress "$HAPROXY_INGRESS_VERSION" github.com/jcmoraisjr/haproxy-ingress ./pkg
# The controller renders haproxy.cfg from its module's templates and loads its Lua scripts: the
# image takes them from here, as the module's own Dockerfile copies its rootfs/.
ingress_root=$KUBE_CACHE/haproxy-ingress-$HAPROXY_INGRESS_VERSION/rootfs
if [[ ! -d $ingress_root ]]; then
  cp -r "$(module_dir "github.com/jcmoraisjr/haproxy-ingress@$HAPROXY_INGRESS_VERSION")/rootfs" "$ingress_root.tmp"
  chmod -R u+w "$ingress_root.tmp"
  mv "$ingress_root.tmp" "$ingress_root"
fi
