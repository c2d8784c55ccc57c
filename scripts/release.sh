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
#   SVC_RELEASE_REBUILD=1    build dist/svc again first (else an existing one is used only when
#                            it says it is this version and this commit)
# Refused before anything is built (exit 2): a tree with changes or untracked files, a dist/svc
# built from another commit or version, a base or a pushed digest that is not a full sha256.
set -euo pipefail
cd "$(dirname "$0")/.."

refuse() { echo "release: $*" >&2; exit 2; }

: "${SVC_IMAGE_REPO:?set SVC_IMAGE_REPO, e.g. registry.example.com/svc/runtime}"
: "${OPENWEBUI_IMAGE:?set OPENWEBUI_IMAGE to the Open WebUI image pinned by digest (…@sha256:…)}"
case "$OPENWEBUI_IMAGE" in
  *@sha256:*) [[ "$OPENWEBUI_IMAGE" =~ @sha256:[0-9a-f]{64}$ ]] || refuse "OPENWEBUI_IMAGE $OPENWEBUI_IMAGE: the digest after @sha256: must be 64 hex digits" ;;
  localhost/*) [ -n "${SVC_RELEASE_ALLOW_LOCAL_BASE:-}" ] || refuse "OPENWEBUI_IMAGE $OPENWEBUI_IMAGE is a local image; set SVC_RELEASE_ALLOW_LOCAL_BASE=1 for a test release" ;;
  *) refuse "OPENWEBUI_IMAGE must be pinned by digest (…@sha256:…), not a tag" ;;
esac

# What is released is the commit, nothing beside it: the image copies the tree.
changes=$(git status --porcelain --untracked-files=normal) || refuse "not a git checkout; a release is built from a commit"
if [ -n "$changes" ]; then
  echo "$changes" | head -5 | sed 's/^/  /' >&2
  refuse "the tree has changes or untracked files (above; $(echo "$changes" | wc -l) in all); commit or remove them and run it again"
fi
VERSION=$(bun -e 'console.log(require("./package.json").version)')
COMMIT=$(git rev-parse --short=12 HEAD)
EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
DEST=${SVC_IMAGE_DEST:-docker://$SVC_IMAGE_REPO:$VERSION}
OUT=${SVC_RELEASE_OUT:-dist/image-digest.txt}
TAG="localhost/svc-runtime-release:$VERSION"

# dist/svc is used only when it is this version of this commit (scripts/build.ts embeds both).
[ -x dist/svc ] && [ -z "${SVC_RELEASE_REBUILD:-}" ] || bun run build
built=$(dist/svc --version 2>/dev/null || true)
[ "$built" = "svc $VERSION ($COMMIT)" ] || refuse "dist/svc says \"${built:-nothing}\", not \"svc $VERSION ($COMMIT)\" (HEAD); build it again (bun run build, or SVC_RELEASE_REBUILD=1) and run it again"

command -v buildah >/dev/null || { echo "release: buildah is not installed (apt-get install buildah)" >&2; exit 1; }
. scripts/image/containers-env.sh
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
[[ "$DIGEST" =~ ^sha256:[0-9a-f]{64}$ ]] || { echo "release: buildah push reported \"$DIGEST\", not a sha256 digest of 64 hex digits" >&2; exit 1; }

{
  echo "image=$SVC_IMAGE_REPO@$DIGEST"
  echo "version=$VERSION"
  echo "commit=$COMMIT"
  echo "platform=linux/amd64"
  echo "base=$OPENWEBUI_IMAGE"
  echo "source_date_epoch=$EPOCH"
} >"$OUT"
echo "wrote $OUT:"
cat "$OUT"
