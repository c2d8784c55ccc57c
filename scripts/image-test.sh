#!/usr/bin/env bash
# Builds the runtime image without a daemon and boots it (issue 18), ending with one line
# `N passed, N failed`:
#   1. the base: upstream's Open WebUI image pinned by digest (SVC_OPENWEBUI_IMAGE=…@sha256:…)
#      when its registry answers, otherwise the stand-in of scripts/image/base.sh (Debian +
#      open-webui from PyPI, laid out as upstream's), cached between runs;
#   2. the project's Dockerfile, unchanged, with buildah (--isolation chroot);
#   3. test/image/: podman runs it under the restricted securityContext against a control plane
#      on the host (start failures, tool sync, seeding, a decision, a clean stop, a pack layer);
#   4. reproducibility: two --no-cache builds of scripts/release.sh give the same digest, each
#      building dist/svc again (SVC_RELEASE_REBUILD=1).
# Needs root (rootful podman). Set SVC_TEST_SKIP_IMAGE=1 to skip it.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-artifacts

if [ "$(id -u)" != 0 ]; then echo "image-test: skipped (needs root for podman and debootstrap)"; echo "0 passed, 0 failed"; exit 0; fi

need=()
for p in buildah podman skopeo debootstrap runc uidmap fuse-overlayfs; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  echo "image-test: installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
    { echo "image-test: installing ${need[*]} failed"; echo "0 passed, 1 failed"; exit 1; }
fi
. scripts/image/containers-env.sh

passed=0; failed=0
check() { # name, command...: one counted check
  local name=$1; shift
  local from; from=$(($(wc -l <test-artifacts/image-test.log) + 1))
  if "$@" >>test-artifacts/image-test.log 2>&1; then passed=$((passed + 1)); echo "ok   $name"; else
    failed=$((failed + 1)); echo "FAIL $name (test-artifacts/image-test.log); its last lines:"
    tail -n +"$from" test-artifacts/image-test.log | tail -n 15 | sed 's/^/     /'
  fi
}

# What earlier runs left behind: the temp dirs of a run that was killed, and the images each run
# untags (every run builds the same tags again, so the previous ones become dangling). Left
# alone they grow the cache by gigabytes a run until a build fails for want of space.
touch test-artifacts/image-test.log
find "$TMPDIR" -maxdepth 1 -name 'tmp.*' -mmin +120 -exec rm -rf {} + 2>/dev/null
podman image prune -f >/dev/null 2>&1 || true

[ -x dist/svc ] || bun run build >>test-artifacts/image-test.log 2>&1 || { echo "image-test: bun run build failed"; echo "0 passed, 1 failed"; exit 1; }

base=""
if [ -n "${SVC_OPENWEBUI_IMAGE:-}" ] && timeout 60 podman pull -q "$SVC_OPENWEBUI_IMAGE" >>test-artifacts/image-test.log 2>&1; then
  base=$SVC_OPENWEBUI_IMAGE
  echo "image-test: base $base (upstream, pinned by digest)"
else
  echo "image-test: base: the stand-in built from Debian and PyPI (cached; the first build takes several minutes)"
  base=$(bash scripts/image/base.sh 2>>test-artifacts/image-test.log) || { echo "image-test: building the base failed"; tail -n 20 test-artifacts/image-test.log; echo "0 passed, 1 failed"; exit 1; }
fi

IMAGE=localhost/svc-runtime:test
check "the Dockerfile builds on $base (buildah, no daemon)" \
  buildah bud --isolation chroot --quiet --timestamp 0 --build-arg "OPENWEBUI_IMAGE=$base" -t "$IMAGE" .
# A base without upstream's layout fails the build, naming what is missing.
bad_base_fails() {
  local out
  printf 'FROM %s\nRUN rm -rf /app/build\n' "$base" | buildah bud --isolation chroot --quiet -t localhost/svc-bad-base:test -f - . || return 1
  out=$(buildah bud --isolation chroot --quiet --build-arg OPENWEBUI_IMAGE=localhost/svc-bad-base:test . 2>&1) && return 1
  echo "$out" | grep -q "has no web build at /app/build"
}
check "a base without upstream's layout fails the build with the reason" bad_base_fails

if [ "$failed" -eq 0 ]; then
  # The suite's own temp files go to /tmp (TMPDIR above is podman's, for image layers).
  SVC_IMAGE_UNDER_TEST=$IMAGE TMPDIR=/tmp bun test --timeout 900000 test/image >test-artifacts/image-suite.log 2>&1
  rc=$?
  tail -n 30 test-artifacts/image-suite.log
  p=$(grep -Eo '^ *[0-9]+ pass' test-artifacts/image-suite.log | tail -1 | grep -Eo '[0-9]+' || echo 0)
  f=$(grep -Eo '^ *[0-9]+ fail' test-artifacts/image-suite.log | tail -1 | grep -Eo '[0-9]+' || echo 0)
  [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
  passed=$((passed + p)); failed=$((failed + f))
fi

# Only the digests are compared, so each OCI layout (the whole image, ~4 GB on the stand-in base)
# is removed once its digest is read, and the subshell's trap removes it however the check ends.
same_digest_twice() (
  out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
  free=$(df --output=avail -B1G "$out" | tail -1 | tr -d ' ')
  [ "$free" -ge 6 ] || { echo "image-test: only ${free} GB free in $out; two release builds need about 6 GB"; return 1; }
  for i in 1 2; do
    SVC_IMAGE_REPO=registry.example.com/svc/runtime OPENWEBUI_IMAGE=$base SVC_RELEASE_ALLOW_LOCAL_BASE=1 SVC_RELEASE_NO_CACHE=1 SVC_RELEASE_REBUILD=1 \
      SVC_IMAGE_DEST="oci:$out/oci$i:release" SVC_RELEASE_OUT="$out/digest$i.txt" bash scripts/release.sh || return 1
    rm -rf "$out/oci$i"
  done
  d1=$(grep '^image=' "$out/digest1.txt"); d2=$(grep '^image=' "$out/digest2.txt")
  echo "build 1: $d1"; echo "build 2: $d2"
  [ -n "$d1" ] && [ "$d1" = "$d2" ]
)
check "two --no-cache builds of scripts/release.sh give the same digest" same_digest_twice

podman image prune -f >/dev/null 2>&1 || true
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
