#!/usr/bin/env bash
# Builds (once, then cached) the stand-in for upstream's Open WebUI image when its registry
# cannot be reached: Debian bookworm (debootstrap, from this machine's own apt mirror) with
# open-webui from PyPI, laid out as upstream's image is:
#   /app/backend/open_webui   the Python package (upstream copies its source tree there)
#   /app/build                the web build (the wheel ships it as open_webui/frontend)
#   /app/package.json         {"version": ...}, which upstream's image carries
#   /app/backend/data         DATA_DIR
# and python3 (a venv on PATH) able to `import open_webui` from WORKDIR /app/backend.
# Prints the image name. Needs root, debootstrap and podman (scripts/image-test.sh installs them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/containers-env.sh"

OPENWEBUI_VERSION=${OPENWEBUI_VERSION:-0.12.4}
IMAGE=localhost/svc-openwebui-base:$OPENWEBUI_VERSION
if podman image exists "$IMAGE"; then echo "$IMAGE"; exit 0; fi

# The mirror this machine's apt already uses (so nothing names a host here).
MIRROR=${SVC_DEBIAN_MIRROR:-$( (cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true) | grep -oE '^(URIs:|deb) +[a-z]+://[^ ]+' | grep -v security | head -n1 | awk '{print $2}')}
[ -n "$MIRROR" ] || { echo "image base: no Debian mirror found in /etc/apt (set SVC_DEBIAN_MIRROR)" >&2; exit 1; }

work=$(mktemp -d "$SVC_IMAGE_CACHE/tmp/base.XXXXXX")
root="$work/rootfs"
cleanup() {
  for m in proc dev/pts dev; do mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m"; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "image base: debootstrap bookworm (minbase) into $root" >&2
debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log" "$root/debootstrap/debootstrap.log" >&2 2>/dev/null; exit 1; }

# Inside the root only its own paths exist: a clean environment (TMPDIR above is a host path).
inroot() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
mount -t proc proc "$root/proc"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# What upstream's python:3.11-slim has and Open WebUI needs, installed by apt in the root.
inroot apt-get update -qq >&2
inroot apt-get install -y -qq --no-install-recommends \
  python3.11 python3.11-venv ca-certificates libgomp1 >"$work/apt.log" 2>&1 || { tail -n 20 "$work/apt.log" >&2; exit 1; }
echo "image base: pip install open-webui==$OPENWEBUI_VERSION (a few minutes)" >&2
# pip trusts what this machine trusts (a proxy's CA included) for the install only: the bundle
# is copied in for these commands and removed, never part of the image.
cp /etc/ssl/certs/ca-certificates.crt "$root/tmp/host-ca.crt"
inroot /usr/bin/python3.11 -m venv /opt/openwebui
inroot PIP_CERT=/tmp/host-ca.crt /opt/openwebui/bin/pip install -q --no-cache-dir --upgrade pip >&2
inroot PIP_CERT=/tmp/host-ca.crt /opt/openwebui/bin/pip install -q --no-cache-dir "open-webui==$OPENWEBUI_VERSION" >&2
rm -f "$root/tmp/host-ca.crt"
umount -l "$root/proc"

site=$(echo "$root"/opt/openwebui/lib/python3.11/site-packages)
mkdir -p "$root/app/backend/data"
mv "$site/open_webui" "$root/app/backend/open_webui"
mv "$root/app/backend/open_webui/frontend" "$root/app/build"
printf '{"name": "open-webui", "version": "%s"}\n' "$OPENWEBUI_VERSION" >"$root/app/package.json"
: >"$root/etc/resolv.conf"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

echo "image base: importing as $IMAGE" >&2
tar -C "$root" --numeric-owner -cf "$work/rootfs.tar" .
podman import \
  --change 'ENV PATH=/opt/openwebui/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV DATA_DIR=/app/backend/data' \
  --change 'ENV PORT=8080' \
  --change 'WORKDIR /app/backend' \
  --change 'CMD ["uvicorn","open_webui.main:app","--host","0.0.0.0","--port","8080"]' \
  "$work/rootfs.tar" "$IMAGE" >/dev/null
echo "$IMAGE"
