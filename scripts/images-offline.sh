#!/usr/bin/env bash
# images-offline.sh — `make images-offline`: local stand-ins for the five base images that
# docker-compose.yml and build/Dockerfile name, for a machine whose Docker engine cannot pull
# from a registry. Users with a registry never need it: `docker compose up --build` pulls the
# real images.
#
# Each stand-in is built from Debian packages: debootstrap writes a root file system (minbase,
# the machine's own Debian release, the mirror taken from its apt configuration), apt installs
# what the image needs, and `docker import` turns it into an image. It then prints the Compose
# variables that select the stand-ins; the same lines are written to $OFFLINE_DIR/images.env,
# and added to the repository's .env, which Compose reads by itself (see below):
#
#   REDIS_IMAGE    likes-offline/redis:<release>    redis-server + redis-cli (for the health check);
#                  like the official image it runs redis-server as user redis with protected mode
#                  off (Debian's default keeps it on and refuses clients from other containers)
#   HAPROXY_IMAGE  likes-offline/haproxy:<release>  haproxy + wget (for the health check), running
#                  /usr/local/etc/haproxy/haproxy.cfg in the foreground as the official image does
#   GO_IMAGE       likes-offline/golang:<go version> Debian + this machine's Go toolchain
#                  (/usr/local/go), its CA bundle and its GOPROXY/GOFLAGS/GOSUMDB/... settings, so
#                  the build stage reaches the module proxy as this machine does
#   STATIC_IMAGE   likes-offline/static:nonroot    distroless-like: no shell, no package manager,
#                  /etc/passwd with nonroot (65532), Debian's CA certificates and time zones
#   PROMETHEUS_IMAGE likes-offline/prometheus:<release>  Debian's prometheus (on a root file
#                  system of its own, so the others' stays small) + wget (for the health check),
#                  running /usr/bin/prometheus as nobody with its data in /prometheus, as the
#                  official image does; its UI is Debian's classic one (/classic/graph)
#
# .env: Compose reads $DOTENV for every variable the shell leaves unset, so after this script a
# plain `docker compose up --build --wait` works here. scripts/offline-env.sh adds the variables
# above and, when docker-compose.yml's default open-file limits are more than this engine grants
# a container (asked of the engine: `ulimit -Hn` in a container), NOFILE, HAPROXY_NOFILE and
# HAPROXY_MAXCONN that fit. It writes them in a marked block of its own at the end of .env and
# rewrites only that block on every run, so a Go or Debian upgrade refreshes the stand-in tags;
# a variable set outside the block is the user's, wins, and is never written in it. The user's
# values, comments and order stay as they are.
#
# It also installs what the Dockerfile's BuildKit features need when the machine lacks them
# (Debian 12 ships Engine 20.10 with Compose 1.29 only): the Compose v2 CLI plugin and buildx,
# built from source with this machine's Go into ~/.docker/cli-plugins (or $DOCKER_CONFIG).
#
# Environment (defaults):
#   DOCKER        the docker CLI to use; default: the first of /usr/bin/docker, docker on PATH
#                 that reaches the engine
#   OFFLINE_DIR   .run/offline: the root file system cache (rootfs-*.tar, reused while the
#                 release, mirror and package list are the same) and images.env
#   DOTENV        .env (in the repository, beside docker-compose.yml): the file Compose reads
#   COMPOSE_VERSION v2.40.3   BUILDX_VERSION v0.38.2   (built when missing)
# Needs root, debootstrap and a running engine (`dockerd`; .ci/run starts one).
set -euo pipefail

cd "$(dirname "$0")/.."
OFFLINE_DIR=${OFFLINE_DIR:-.run/offline}
DOTENV=${DOTENV:-.env}
COMPOSE_VERSION=${COMPOSE_VERSION:-v2.40.3}
BUILDX_VERSION=${BUILDX_VERSION:-v0.38.2}
PLUGINS=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
PACKAGES=(redis-server redis-tools haproxy wget ca-certificates tzdata)
# Prometheus has a root file system of its own: its binaries and web assets would bloat every
# image built on the shared one, and a change here leaves that one's cache key alone.
PROMETHEUS_PACKAGES=(prometheus wget ca-certificates)

say() { echo "images-offline: $*" >&2; }
die() {
  say "$*"
  exit 1
}

[[ $(id -u) == 0 ]] || die "run as root: debootstrap writes device nodes and owners"
command -v debootstrap >/dev/null || die "debootstrap missing: apt-get install -y debootstrap"
[[ -x $GO ]] || die "go missing: want /usr/local/go/bin/go (the Go build stage copies this toolchain)"

# pick_docker prints the first docker CLI that reaches the engine. Debian's /usr/bin/docker comes
# first: it is the engine's own version; a newer client negotiates the API down and works too.
pick_docker() {
  local d
  for d in ${DOCKER:-} /usr/bin/docker "$(command -v docker || true)"; do
    [[ -n $d && -x $d ]] || continue
    if "$d" info --format '{{.ServerVersion}}' >/dev/null 2>&1; then
      echo "$d"
      return
    fi
  done
  die "no docker CLI reaches an engine: start dockerd (as root: dockerd >/var/log/dockerd.log 2>&1 &)"
}
DOCKER=$(pick_docker)
say "docker CLI $DOCKER, engine $("$DOCKER" info --format '{{.ServerVersion}}')"

# install_plugins builds the Compose v2 plugin and buildx when `docker compose` or
# `docker buildx` is missing. Both are built with this machine's Go from the module proxy.
install_plugins() {
  local gobin
  gobin=$(mktemp -d)
  mkdir -p "$PLUGINS"
  if ! "$DOCKER" buildx version >/dev/null 2>&1; then
    say "building buildx $BUILDX_VERSION (docker buildx is missing)"
    # Without the version stamp compose refuses the plugin as too old.
    GOBIN=$gobin "$GO" install -trimpath \
      -ldflags "-s -w -X github.com/docker/buildx/version.Version=$BUILDX_VERSION" \
      "github.com/docker/buildx/cmd/buildx@$BUILDX_VERSION"
    install -m 0755 "$gobin/buildx" "$PLUGINS/docker-buildx"
  fi
  if ! "$DOCKER" compose version >/dev/null 2>&1; then
    say "building docker compose $COMPOSE_VERSION (docker compose is missing)"
    # compose's go.mod has exclude directives, which `go install pkg@version` refuses; build it
    # inside the module's own directory instead.
    local dir
    dir=$("$GO" mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [[ -d $dir ]] || die "go mod download github.com/docker/compose/v2@$COMPOSE_VERSION gave no directory"
    (cd "$dir" && "$GO" build -trimpath -o "$gobin/docker-compose" \
      -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" ./cmd)
    install -m 0755 "$gobin/docker-compose" "$PLUGINS/docker-compose"
  fi
  rm -rf "$gobin"
  say "$("$DOCKER" compose version), $("$DOCKER" buildx version)"
}

# debian_mirror prints the URI of the apt source that serves this machine's release (the suite
# named exactly as VERSION_CODENAME, component main), from one-line and deb822 sources alike.
debian_mirror() {
  local codename=$1 f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -r $f ]] || continue
    awk -v rel="$codename" '
      $1 == "deb" {
        i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
        if ($(i + 1) == rel) { for (j = i + 2; j <= NF; j++) if ($j == "main") { print $i; exit } }
      }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -r $f ]] || continue
    # Stanzas are separated by blank lines; keep the URIs of one whose Suites has the release.
    awk -v rel="$codename" '
      function flush() {
        if (deb && hasrel && main && uri != "") print uri
        deb = hasrel = main = 0; uri = ""
      }
      /^[[:space:]]*$/ { flush(); next }
      /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == rel) hasrel = 1 }
      /^Components:/ { for (i = 2; i <= NF; i++) if ($i == "main") main = 1 }
      END { flush() }' "$f"
  done
}

# rootfs_tar CODENAME MIRROR PACKAGE... writes (or reuses) a tarball of a minbase root file
# system with the packages and prints its path; the cache key is the release, the mirror and the
# package list. A tarball is only ever renamed into place when debootstrap succeeded, so a
# cut-off run never leaves a half-made one to be reused.
rootfs_tar() {
  local codename=$1 mirror=$2 key tar work
  shift 2
  local packages=("$@")
  key=$(printf '%s\n' "$codename" "$mirror" "${packages[@]}" | sha256sum | cut -c1-12)
  tar="$OFFLINE_DIR/rootfs-$codename-$key.tar"
  if [[ -s $tar ]]; then
    say "reusing $tar"
    echo "$tar"
    return
  fi
  work=$(mktemp -d)
  say "debootstrap $codename from $mirror with ${packages[*]}"
  if ! debootstrap --variant=minbase --include="$(
    IFS=,
    echo "${packages[*]}"
  )" "$codename" "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1; then
    tail -20 "$work/debootstrap.log" >&2
    rm -rf "$work"
    die "debootstrap failed (log above)"
  fi
  # What an image needs no copy of: package downloads, apt lists, logs, device nodes (the engine
  # provides /dev, /proc and /sys).
  rm -rf "$work"/root/var/cache/apt/archives/*.deb "$work"/root/var/lib/apt/lists/* \
    "$work"/root/var/log/* "$work"/root/dev/* "$work"/root/proc/* "$work"/root/sys/*
  mkdir -p "$OFFLINE_DIR"
  tar -C "$work/root" --numeric-owner -cf "$tar.part" .
  mv "$tar.part" "$tar"
  rm -rf "$work"
  echo "$tar"
}

# build_image TAG DIR: build the Dockerfile in DIR (no registry: every FROM is local).
build_image() {
  "$DOCKER" build -q -t "$1" "$2" >/dev/null
  say "built $1"
}

# nofile_cap IMAGE prints the hard open-file limit the engine gives a container of IMAGE (a
# number, or "unlimited").
nofile_cap() {
  "$DOCKER" run --rm --network none --entrypoint sh "$1" -c 'ulimit -H -n'
}

go_env_lines() {
  local v val
  for v in GOPROXY GOFLAGS GOSUMDB GONOSUMDB GOPRIVATE GONOPROXY GOINSECURE; do
    val=$("$GO" env "$v")
    [[ -n $val ]] && printf 'ENV %s=%s\n' "$v" "$val"
  done
  return 0
}

main() {
  local codename mirror tar base go_version
  install_plugins
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [[ -n $codename ]] || die "/etc/os-release names no VERSION_CODENAME; not a Debian-like machine"
  mirror=$(debian_mirror "$codename" | head -1)
  [[ -n $mirror ]] || die "no apt source for $codename main in /etc/apt/sources.list{,.d/*}"
  tar=$(rootfs_tar "$codename" "$mirror" "${PACKAGES[@]}")
  base=likes-offline/debian:$codename
  "$DOCKER" import "$tar" "$base" >/dev/null
  say "imported $base"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT # global: the trap runs after main returns

  mkdir -p "$work/redis"
  cat >"$work/redis/entrypoint.sh" <<'EOF'
#!/bin/sh
# Like the official redis image: redis-server has protected mode off by default (a container's
# clients come from other containers, never from its own loopback), whatever user starts it, and
# the options it is given override that (likes-redis.sh turns it on with credentials); started
# as root, it runs as user redis and owns /data (a Kubernetes Pod starts it as uid 999 instead).
# A configuration file stays the first argument, and "-" (the configuration on standard input)
# the last.
set -e
if [ "${1#-}" != "$1" ]; then set -- redis-server "$@"; fi
if [ "$1" = redis-server ]; then
  shift
  case ${1:-} in
  -* | '') set -- redis-server --protected-mode no "$@" ;;
  *) conf=$1; shift; set -- redis-server "$conf" --protected-mode no "$@" ;;
  esac
  if [ "$(id -u)" = 0 ]; then
    chown -R redis:redis /data
    exec setpriv --reuid=redis --regid=redis --init-groups "$@"
  fi
fi
exec "$@"
EOF
  chmod 0755 "$work/redis/entrypoint.sh"
  cat >"$work/redis/Dockerfile" <<EOF
FROM $base
COPY entrypoint.sh /usr/local/bin/docker-entrypoint.sh
RUN mkdir -p /data && chown redis:redis /data
VOLUME /data
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["redis-server"]
EOF
  build_image "likes-offline/redis:$codename" "$work/redis"

  mkdir -p "$work/haproxy"
  cat >"$work/haproxy/Dockerfile" <<EOF
FROM $base
RUN mkdir -p /usr/local/etc/haproxy /var/lib/haproxy && chown haproxy:haproxy /var/lib/haproxy
USER haproxy
WORKDIR /var/lib/haproxy
STOPSIGNAL SIGUSR1
CMD ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
EOF
  build_image "likes-offline/haproxy:$codename" "$work/haproxy"

  go_version=$("$GO" env GOVERSION)
  go_version=${go_version#go}
  mkdir -p "$work/golang"
  # Hard links when $work is on the toolchain's file system: no 250 MB copy.
  cp -al "$("$GO" env GOROOT)" "$work/golang/go" 2>/dev/null || cp -a "$("$GO" env GOROOT)" "$work/golang/go"
  cp /etc/ssl/certs/ca-certificates.crt "$work/golang/ca-certificates.crt"
  {
    echo "FROM $base"
    echo "COPY go /usr/local/go"
    echo "# This machine's CA bundle: the module proxy is reached the way this machine reaches it."
    echo "COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt"
    echo "ENV GOPATH=/go GOTOOLCHAIN=local PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    go_env_lines
    echo "WORKDIR /go"
  } >"$work/golang/Dockerfile"
  build_image "likes-offline/golang:$go_version" "$work/golang"

  # distroless-like: imported from a tarball (no Dockerfile), so owners and modes are exact.
  local static=$work/static
  mkdir -p "$static"/{etc,tmp,home/nonroot}
  tar -C "$static" -xf "$tar" ./etc/ssl/certs/ca-certificates.crt ./usr/share/zoneinfo
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
    'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >"$static/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'nonroot:x:65532:' >"$static/etc/group"
  chmod 1777 "$static/tmp"
  chown 65532:65532 "$static/home/nonroot"
  tar -C "$static" --numeric-owner -c . | "$DOCKER" import \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change 'USER 65532:65532' --change 'WORKDIR /home/nonroot' - likes-offline/static:nonroot >/dev/null
  say "imported likes-offline/static:nonroot"

  # Like the official image: prometheus as nobody, its data in /prometheus; the compose file
  # gives the command line (the defaults here are the official image's).
  local prom_tar prom_base=likes-offline/debian-prometheus:$codename
  prom_tar=$(rootfs_tar "$codename" "$mirror" "${PROMETHEUS_PACKAGES[@]}")
  "$DOCKER" import "$prom_tar" "$prom_base" >/dev/null
  say "imported $prom_base"
  mkdir -p "$work/prometheus"
  cat >"$work/prometheus/Dockerfile" <<EOF
FROM $prom_base
RUN mkdir -p /prometheus && chown nobody:nogroup /prometheus
USER nobody
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
EOF
  build_image "likes-offline/prometheus:$codename" "$work/prometheus"

  local env="$OFFLINE_DIR/images.env"
  mkdir -p "$OFFLINE_DIR"
  printf '%s\n' "REDIS_IMAGE=likes-offline/redis:$codename" "HAPROXY_IMAGE=likes-offline/haproxy:$codename" \
    "GO_IMAGE=likes-offline/golang:$go_version" "STATIC_IMAGE=likes-offline/static:nonroot" \
    "PROMETHEUS_IMAGE=likes-offline/prometheus:$codename" >"$env"
  local cap
  cap=$(nofile_cap "$base") || die "could not run a container of $base to ask for its open-file limit"
  say "a container gets at most $cap open files from this engine"
  scripts/offline-env.sh --nofile-cap "$cap" "$env" "$DOTENV"
  say "done; docker compose in this directory now uses the stand-ins ($DOTENV). The variables that"
  say "select them, for a shell or another directory (also in $env):"
  sed 's/^/  export /' "$env"
}

main "$@"
