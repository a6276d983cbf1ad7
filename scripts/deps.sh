#!/usr/bin/env bash
# Installs the Debian packages tide builds, tests and benches with (wrk: make
# bench's POST rows), only those missing, so a second run costs a few dpkg
# queries and nothing else.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libmicrohttpd-dev libcurl4-openssl-dev libjansson-dev libyaml-dev
  libsqlite3-dev libpq-dev libcmocka-dev
  postgresql
  python3 curl procps
  chromium
  prometheus
  libgnutls28-dev
  nettle-dev
  podman
  catatonit
  runc
  busybox-static
  openssl
  wrk
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
# python3 may come from elsewhere than Debian (pyenv); a working one is enough.
if command -v python3 >/dev/null 2>&1; then
  missing=("${missing[@]/python3}")
fi
read -r -a missing <<<"${missing[*]}"

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
