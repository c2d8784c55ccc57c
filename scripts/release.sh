#!/usr/bin/env bash
# Builds the runtime image for linux/amd64 without a daemon (buildah), reproducibly, pushes it,
# and writes the digest file a release carries (spec §9.5): dist/image-digest.txt with an
# `image=<repo>@sha256:<digest>` line. Deploy that digest, never a tag.
#   OPENWEBUI_IMAGE=ghcr.io/open-webui/open-webui@sha256:<digest> \
#   SVC_IMAGE_REPO=registry.example.com/svc/runtime bash scripts/release.sh
# Reproducible: every timestamp in the image is SOURCE_DATE_EPOCH (default: the commit's time),
# so two builds of one commit on one base give the same digest. The digest is the one the
# registry stores, as `buildah push --digestfile` reports it (not a local image id).
#   SVC_IMAGE_DEST   where to push instead of docker://$SVC_IMAGE_REPO:<version> (any
#                    containers-transports destination, e.g. oci:/tmp/out:tag for a dry run)
#   SVC_RELEASE_NO_CACHE=1   build every step again (what the reproducibility test does)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/image/containers-env.sh

: "${SVC_IMAGE_REPO:?set SVC_IMAGE_REPO, e.g. registry.example.com/svc/runtime}"
: "${OPENWEBUI_IMAGE:?set OPENWEBUI_IMAGE to the Open WebUI image pinned by digest (…@sha256:…)}"
case "$OPENWEBUI_IMAGE" in
  *@sha256:[0-9a-f]*) ;;
  localhost/*) [ -n "${SVC_RELEASE_ALLOW_LOCAL_BASE:-}" ] || { echo "release: OPENWEBUI_IMAGE $OPENWEBUI_IMAGE is a local image; set SVC_RELEASE_ALLOW_LOCAL_BASE=1 for a test release" >&2; exit 2; } ;;
  *) echo "release: OPENWEBUI_IMAGE must be pinned by digest (…@sha256:…), not a tag" >&2; exit 2 ;;
esac
command -v buildah >/dev/null || { echo "release: buildah is not installed (apt-get install buildah)" >&2; exit 1; }

VERSION=$(bun -e 'console.log(require("./package.json").version)')
EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
DEST=${SVC_IMAGE_DEST:-docker://$SVC_IMAGE_REPO:$VERSION}
OUT=${SVC_RELEASE_OUT:-dist/image-digest.txt}
TAG="localhost/svc-runtime-release:$VERSION"

[ -x dist/svc ] && [ -z "${SVC_RELEASE_REBUILD:-}" ] || bun run build
mkdir -p "$(dirname "$OUT")"
cache=(); [ -n "${SVC_RELEASE_NO_CACHE:-}" ] && cache=(--no-cache)
buildah bud --isolation chroot --quiet "${cache[@]}" \
  --platform linux/amd64 \
  --timestamp "$EPOCH" \
  --build-arg "OPENWEBUI_IMAGE=$OPENWEBUI_IMAGE" \
  --label "org.opencontainers.image.version=$VERSION" \
  --label "org.opencontainers.image.base.name=$OPENWEBUI_IMAGE" \
  --tag "$TAG" \
  . >/dev/null

digestfile=$(mktemp)
trap 'rm -f "$digestfile"' EXIT
buildah push --quiet --digestfile "$digestfile" "$TAG" "$DEST"
DIGEST=$(cat "$digestfile")
case "$DIGEST" in sha256:[0-9a-f]*) ;; *) echo "release: buildah push reported no digest" >&2; exit 1 ;; esac

{
  echo "image=$SVC_IMAGE_REPO@$DIGEST"
  echo "version=$VERSION"
  echo "platform=linux/amd64"
  echo "base=$OPENWEBUI_IMAGE"
  echo "source_date_epoch=$EPOCH"
} >"$OUT"
echo "wrote $OUT:"
cat "$OUT"
