#!/usr/bin/env bash
# offline-env.sh — merge Compose settings into a .env file without touching what is there.
# `make images-offline` (scripts/images-offline.sh) runs it so that a plain `docker compose up`
# in the repository finds the local stand-in images and open-file limits the engine grants:
# Compose reads .env from the project directory for every variable the shell does not set.
#
#   scripts/offline-env.sh [--nofile-cap N] IMAGES_ENV DOTENV
#
# Every KEY=VALUE line of IMAGES_ENV whose KEY DOTENV does not set yet is appended to DOTENV.
# With --nofile-cap N (the hard open-file limit a container gets from the engine; "unlimited"
# or empty: none), NOFILE, HAPROXY_NOFILE and HAPROXY_MAXCONN are appended too when DOTENV does
# not set them and docker-compose.yml's defaults (65536, 200200, 100000) would not fit under N:
# each limit becomes N, and HAPROXY_MAXCONN the most that fits, (HAPROXY_NOFILE - 200) / 2.
# Lines already in DOTENV (values, comments, blank lines, their order) are kept as they are; a
# second run adds nothing. DOTENV is created when missing.
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

# key_line KEY prints the last line of DOTENV that sets KEY (`KEY=...` or `export KEY=...`).
key_line() {
  [[ -f $dotenv ]] || return 1
  grep -E "^[[:space:]]*(export[[:space:]]+)?$1[[:space:]]*=" "$dotenv" | tail -1 | grep .
}

# value_of KEY prints KEY's value in DOTENV, quotes removed; status 1 when DOTENV does not set it.
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

if ((${#added[@]} == 0)); then
  say "$dotenv already sets every variable; unchanged"
  exit 0
fi
{
  # Never glue the first new line onto a last line without a newline.
  if [[ -s $dotenv && $(tail -c1 "$dotenv" | od -An -c | tr -d ' ') != '\n' ]]; then
    echo
  fi
  echo "# Added by \`make images-offline\` (scripts/offline-env.sh): local stand-ins for the base"
  if [[ -n $cap ]]; then
    echo "# images, and open-file limits within the $cap this engine grants a container."
  else
    echo "# images."
  fi
  echo "# Edit or delete freely: a later run only adds variables that are not set here."
  printf '%s\n' "${added[@]}"
} >>"$dotenv"
say "added to $dotenv: ${added[*]}"
