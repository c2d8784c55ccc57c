#!/usr/bin/env bash
# Builds and pushes the runtime image for linux/amd64 and writes the digest file that a release
# carries (spec §9.5): dist/image-digest.txt with an `image=<repo>@sha256:<digest>` line. Deploy
# that digest, never a tag.
#   OPENWEBUI_IMAGE=ghcr.io/open-webui/open-webui@sha256:<digest> \
#   SVC_IMAGE_REPO=registry.example.com/svc/runtime bash scripts/release.sh
# Needs docker with buildx and a registry login. (Not exercised in the build sandbox: no docker engine.)
set -euo pipefail
cd "$(dirname "$0")/.."

: "${SVC_IMAGE_REPO:?set SVC_IMAGE_REPO, e.g. registry.example.com/svc/runtime}"
: "${OPENWEBUI_IMAGE:?set OPENWEBUI_IMAGE to the Open WebUI image pinned by digest (…@sha256:…)}"
case "$OPENWEBUI_IMAGE" in *@sha256:[0-9a-f]*) ;; *) echo "OPENWEBUI_IMAGE must be pinned by digest (…@sha256:…), not a tag" >&2; exit 2;; esac

VERSION=$(bun -e 'console.log(require("./package.json").version)')
TAG="$SVC_IMAGE_REPO:$VERSION"
OUT=dist/image-digest.txt

bun run build
mkdir -p dist
docker buildx build \
  --platform linux/amd64 \
  --build-arg "OPENWEBUI_IMAGE=$OPENWEBUI_IMAGE" \
  --label "org.opencontainers.image.version=$VERSION" \
  --label "org.opencontainers.image.base.name=$OPENWEBUI_IMAGE" \
  --tag "$TAG" \
  --metadata-file dist/image-metadata.json \
  --push \
  .

DIGEST=$(python3 -c 'import json,sys; print(json.load(open("dist/image-metadata.json"))["containerimage.digest"])')
case "$DIGEST" in sha256:[0-9a-f]*) ;; *) echo "no image digest in dist/image-metadata.json" >&2; exit 1;; esac

{
  echo "image=$SVC_IMAGE_REPO@$DIGEST"
  echo "version=$VERSION"
  echo "platform=linux/amd64"
  echo "base=$OPENWEBUI_IMAGE"
} >"$OUT"
echo "wrote $OUT:"
cat "$OUT"
