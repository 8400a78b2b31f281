#!/usr/bin/env bash
# offline-env.sh — merge Compose settings into a .env file without touching what is there.
# `make images-offline` (scripts/images-offline.sh) runs it so that a plain `docker compose up`
# in the repository finds the local stand-in images and open-file limits the engine grants:
# Compose reads .env from the project directory for every variable the shell does not set.
#
#   scripts/offline-env.sh [--nofile-cap N] IMAGES_ENV DOTENV
#
# The script owns one block at the end of DOTENV, between the marker lines BEGIN_MARK and
# END_MARK below, and rewrites it on every run; every other line is the user's. The block holds
# every KEY=VALUE line of IMAGES_ENV whose KEY the user's lines do not set. With --nofile-cap N
# (the hard open-file limit a container gets from the engine; "unlimited" or empty: none), it
# holds NOFILE, HAPROXY_NOFILE and HAPROXY_MAXCONN too when the user's lines do not set them and
# docker-compose.yml's defaults (65536, 200200, 100000) would not fit under N: each limit
# becomes N, and HAPROXY_MAXCONN the most that fits, (HAPROXY_NOFILE - 200) / 2. So a run after a
# Go or Debian upgrade replaces the stand-in tags an earlier run wrote, while a value the user
# set (outside the block) always wins and is never added again. The user's lines (values,
# comments, blank lines, their order) are kept as they are; a second run changes nothing. The
# unmarked block earlier versions appended (from their "# Added by `make images-offline`" line
# to the next blank line or the end) counts as the script's and is replaced. DOTENV is created
# when missing.
set -euo pipefail

DEFAULT_NOFILE=65536
DEFAULT_HAPROXY_NOFILE=200200
DEFAULT_HAPROXY_MAXCONN=100000
# haproxy needs two descriptors per connection and about a hundred more (docker-compose.yml).
HAPROXY_FD_HEADROOM=200

say() { echo "offline-env: $*" >&2; }
die() {
  say "$*"
  exit 2
}
usage() { die "usage: $0 [--nofile-cap N] IMAGES_ENV DOTENV"; }

BEGIN_MARK='# >>> make images-offline (scripts/offline-env.sh) rewrites the lines from here to the end mark'
END_MARK='# <<< make images-offline'
LEGACY_MARK='# Added by `make images-offline`'

cap=
while (($#)); do
  case $1 in
  --nofile-cap)
    (($# >= 2)) || usage
    cap=$2
    shift 2
    ;;
  --) shift && break ;;
  -*) usage ;;
  *) break ;;
  esac
done
(($# == 2)) || usage
images=$1 dotenv=$2
[[ -r $images ]] || die "cannot read $images"
[[ $cap == unlimited ]] && cap=
[[ -z $cap || $cap =~ ^[0-9]+$ ]] || die "--nofile-cap $cap: want a number of files"

# The user's lines: DOTENV without the block this script wrote (marked, or the unmarked one of
# earlier versions).
user=$(mktemp)
trap 'rm -f "$user" "$user.new"' EXIT
if [[ -f $dotenv ]]; then
  awk -v begin="$BEGIN_MARK" -v end="$END_MARK" -v legacy="$LEGACY_MARK" '
    skip == 1 { if ($0 == end) skip = 0; next }
    skip == 2 && /^[[:space:]]*$/ { skip = 0 }
    skip == 2 { next }
    $0 == begin { skip = 1; next }
    index($0, legacy) == 1 { skip = 2; next }
    { print }' "$dotenv" >"$user"
fi

# key_line KEY prints the last of the user's lines that sets KEY (`KEY=...` or `export KEY=...`).
key_line() {
  grep -E "^[[:space:]]*(export[[:space:]]+)?$1[[:space:]]*=" "$user" | tail -1 | grep .
}

# value_of KEY prints KEY's value in the user's lines, quotes removed; status 1 when they do not
# set it.
value_of() {
  local line
  line=$(key_line "$1") || return 1
  line=${line#*=}
  line=${line#"${line%%[![:space:]]*}"}
  line=${line%"${line##*[![:space:]]}"}
  line=${line#[\"\']}
  echo "${line%[\"\']}"
}

added=()
add() {
  key_line "$1" >/dev/null && return 0
  added+=("$1=$2")
}

while IFS= read -r line || [[ -n $line ]]; do
  [[ $line =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || continue
  add "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
done <"$images"

if [[ -n $cap ]]; then
  # capped NAME DEFAULT: the value NAME has (the user's), or DEFAULT, lowered to the engine's cap
  # and written when above it.
  capped() {
    local v
    if v=$(value_of "$1"); then
      echo "$v"
    elif (($2 > cap)); then
      echo "$cap"
    else
      echo "$2"
    fi
  }
  nofile=$(capped NOFILE "$DEFAULT_NOFILE")
  value_of NOFILE >/dev/null || [[ $nofile == "$DEFAULT_NOFILE" ]] || add NOFILE "$nofile"
  hnofile=$(capped HAPROXY_NOFILE "$DEFAULT_HAPROXY_NOFILE")
  value_of HAPROXY_NOFILE >/dev/null || [[ $hnofile == "$DEFAULT_HAPROXY_NOFILE" ]] || add HAPROXY_NOFILE "$hnofile"
  maxconn=$DEFAULT_HAPROXY_MAXCONN
  if v=$(value_of HAPROXY_MAXCONN); then
    maxconn=$v
  elif [[ $hnofile =~ ^[0-9]+$ ]] && ((2 * DEFAULT_HAPROXY_MAXCONN + HAPROXY_FD_HEADROOM > hnofile)); then
    maxconn=$(((hnofile - HAPROXY_FD_HEADROOM) / 2))
    add HAPROXY_MAXCONN "$maxconn"
  fi
  # What DOTENV already set is the user's to change; say when it cannot work on this engine.
  for kv in "NOFILE=$nofile" "HAPROXY_NOFILE=$hnofile"; do
    if [[ ${kv#*=} =~ ^[0-9]+$ ]] && ((${kv#*=} > cap)); then
      say "warning: ${kv%%=*}=${kv#*=} is above the $cap open files the engine grants a container; containers will not start"
    fi
  done
  if [[ $maxconn =~ ^[0-9]+$ && $hnofile =~ ^[0-9]+$ ]] && ((2 * maxconn + HAPROXY_FD_HEADROOM > hnofile)); then
    say "warning: HAPROXY_MAXCONN=$maxconn needs HAPROXY_NOFILE >= $((2 * maxconn + HAPROXY_FD_HEADROOM)) (it is $hnofile)"
  fi
fi

{
  cat "$user"
  if ((${#added[@]})); then
    echo "$BEGIN_MARK"
    echo "# Refreshed on every run: local stand-ins for the base images"
    [[ -z $cap ]] || echo "# and open-file limits within the $cap this engine grants a container."
    echo "# To keep a value of your own, set it outside this block: a variable set outside"
    echo "# it is never written here."
    printf '%s\n' "${added[@]}"
    echo "$END_MARK"
  fi
} >"$user.new"
if [[ -f $dotenv ]] && cmp -s "$user.new" "$dotenv"; then
  say "$dotenv unchanged"
  exit 0
fi
if [[ ! -f $dotenv && ! -s $user.new ]]; then
  exit 0
fi
# Written in place, so the file keeps its owner and mode.
cat "$user.new" >"$dotenv"
say "wrote to $dotenv: ${added[*]:-nothing}"
