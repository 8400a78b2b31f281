# shellcheck shell=bash
# images.sh: the images the cluster runs, put into its containerd (namespace k8s.io) with no
# registry: `docker save` from the local engine, `ctr images import` into containerd. Sourced by
# kube-offline.sh.
#
#   likes-kube/pause:local        scripts/kube/pause, containerd's sandbox_image
#   likes-kube/coredns:<version>  the CoreDNS binary build.sh made, on an empty image
#   likes-kube/metrics-server:<version>  likewise
#   likes-kube/haproxy-ingress:<version>  the HAProxy Ingress controller build.sh made, with its
#                                 module's rootfs/, on the haproxy image of `make images-offline`
#                                 (scripts/kube/haproxy-ingress/Dockerfile)
#   likes/writer-svc:dev, likes/fanout-svc:dev, likes/loadgen:dev   build/Dockerfile, as
#                                 docker-compose.yml builds them (docker compose build)
#   likes-kube/redis:local        the Redis stand-in of `make images-offline` under a name that
#                                 does not depend on the Debian release; the overlay deploy/kube
#                                 names it for the base's redis image

# kube_static_image TAG ENTRYPOINT FILE...: an image holding only FILEs at /, imported into the
# engine from a tarball (no base image, no Dockerfile), running as nobody.
kube_static_image() {
  local tag=$1 entry=$2 dir
  shift 2
  dir=$(mktemp -d)
  cp "$@" "$dir/"
  tar -C "$dir" --owner=0 --group=0 -c . | "$DOCKER" import --change "ENTRYPOINT [\"$entry\"]" \
    --change 'USER 65534:65534' - "$tag" >/dev/null
  rm -rf "$dir"
}

# kube_haproxy_ingress_image builds the Ingress controller's image from the cached build (no
# registry: its base is a local image).
kube_haproxy_ingress_image() {
  local base dir build=$KUBE_CACHE/haproxy-ingress-$HAPROXY_INGRESS_VERSION
  base=$(sed -n 's/^HAPROXY_IMAGE=//p' .run/offline/images.env 2>/dev/null || true)
  [[ -n $base ]] || kube_die "no haproxy image: run make images-offline first"
  dir=$(mktemp -d)
  cp -r scripts/kube/haproxy-ingress/. "$build/rootfs" "$dir/"
  cp "$build/haproxy-ingress" "$dir/"
  "$DOCKER" build -q --build-arg "BASE=$base" -t "$KUBE_HAPROXY_INGRESS_IMAGE" "$dir" >/dev/null
  rm -rf "$dir"
}

# kube_images_build makes the images the engine lacks.
kube_images_build() {
  local dir
  dir=$(mktemp -d)
  CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w" -o "$dir/pause" ./scripts/kube/pause
  kube_static_image "$KUBE_PAUSE_IMAGE" /pause "$dir/pause"
  kube_static_image "$KUBE_COREDNS_IMAGE" /coredns "$KUBE_CACHE/coredns-$COREDNS_VERSION/coredns"
  kube_static_image "$KUBE_METRICS_SERVER_IMAGE" /metrics-server \
    "$KUBE_CACHE/metrics-server-$METRICS_SERVER_VERSION/metrics-server"
  rm -rf "$dir"
  kube_haproxy_ingress_image
  # The compose stack's own images, from this checkout, built the way `docker compose up --build`
  # builds them (after the compose suite, from its cache, in seconds).
  kube_say "building likes/credentials:dev, likes/writer-svc:dev, likes/fanout-svc:dev, likes/loadgen:dev"
  "$DOCKER" compose --profile bench build -q credentials writer-svc fanout-svc loadgen >&2
}

# kube_images_load puts the images into the cluster's containerd; an image already there with
# the same id is skipped.
kube_images_load() {
  local img redis
  redis=$(sed -n 's/^REDIS_IMAGE=//p' .run/offline/images.env 2>/dev/null || true)
  [[ -n $redis ]] || kube_die "no Redis stand-in: run make images-offline first"
  "$DOCKER" tag "$redis" likes-kube/redis:local
  for img in "$KUBE_PAUSE_IMAGE" "$KUBE_COREDNS_IMAGE" "$KUBE_METRICS_SERVER_IMAGE" "$KUBE_HAPROXY_INGRESS_IMAGE" \
    likes/credentials:dev likes/writer-svc:dev likes/fanout-svc:dev likes/loadgen:dev likes-kube/redis:local; do
    "$DOCKER" save "$img" | kube_ctr images import - >/dev/null
  done
  kube_say "images in containerd: $(kube_ctr images ls -q | grep -vc '^sha256:') tags"
}
