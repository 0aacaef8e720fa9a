#!/usr/bin/env bash
# Install Mesa's CPU Vulkan driver (lavapipe) new enough for Dawn, on Debian bookworm.
#
#   sudo tools/webgpu/install_lavapipe.sh
#
# Plain bookworm ships Mesa 22.3, which Dawn rejects (it then silently falls back to its
# Null backend). bookworm-backports carries Mesa 25.x, which works for Dawn and wgpu-native.
# Idempotent: the backports suite is added to apt's sources only if it is missing.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then echo "install_lavapipe: run as root" >&2; exit 1; fi
. /etc/os-release
if [[ "${VERSION_CODENAME:-}" != "bookworm" ]]; then
  echo "install_lavapipe: written for Debian bookworm, found '${VERSION_CODENAME:-?}'" >&2
fi

if ! grep -rqsE '(^|[[:space:]])bookworm-backports([[:space:]]|$)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "install_lavapipe: adding bookworm-backports to apt sources" >&2
  cat > /etc/apt/sources.list.d/bookworm-backports.sources <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends -t bookworm-backports mesa-vulkan-drivers libvulkan1

dpkg-query -W -f='${Package} ${Version}\n' mesa-vulkan-drivers libvulkan1
ls /usr/share/vulkan/icd.d/lvp_icd*.json
