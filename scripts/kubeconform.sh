#!/usr/bin/env bash
# Validates Kubernetes manifests (default: deploy/kubernetes/*.yaml) with kubeconform, offline.
# kubeconform comes from the Go module proxy; the Kubernetes JSON schemas from the PyPI package
# kubernetes-validate (kubeconform would download them from the internet), turned into
# standalone files once. Both are cached under /var/cache/svc/kubeval.
#   bash scripts/kubeconform.sh [file.yaml ...]
set -euo pipefail
cd "$(dirname "$0")/.."

KUBECONFORM_VERSION=v0.7.0
SCHEMAS_PACKAGE_VERSION=1.37.0     # kubernetes-validate; its schemas include this Kubernetes version
K8S_VERSION=1.37.0
CACHE=${SVC_KUBEVAL_CACHE:-/var/cache/svc/kubeval}
BIN="$CACHE/bin/kubeconform-$KUBECONFORM_VERSION"
SCHEMAS="$CACHE/schemas-$SCHEMAS_PACKAGE_VERSION"
mkdir -p "$CACHE/bin"

if [ ! -x "$BIN" ]; then
  command -v go >/dev/null || { echo "kubeconform: go is not installed" >&2; exit 1; }
  GOBIN="$CACHE/gobin" go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION" >&2
  mv "$CACHE/gobin/kubeconform" "$BIN"
fi

if [ ! -d "$SCHEMAS/v$K8S_VERSION-standalone-strict" ]; then
  [ -x "$CACHE/venv/bin/python" ] || python3 -m venv "$CACHE/venv"
  "$CACHE/venv/bin/pip" install -q "kubernetes-validate==$SCHEMAS_PACKAGE_VERSION" >&2
  # The package's schemas refer to "/api/_definitions.json" under an https $id; kubeconform
  # would fetch that. Drop the $id and make the reference relative to the file.
  "$CACHE/venv/bin/python" - "$SCHEMAS" "$K8S_VERSION" <<'PY'
import json, os, sys, kubernetes_validate
out_root, version = sys.argv[1], sys.argv[2]
base = os.path.join(os.path.dirname(kubernetes_validate.__file__), "kubernetes-json-schema")
for flavour in ("", "-strict"):
    src = os.path.join(base, f"v{version}-local{flavour}")
    out = os.path.join(out_root, f"v{version}-standalone{flavour}")
    os.makedirs(out + ".tmp", exist_ok=True)
    for name in os.listdir(src):
        if name.endswith(".json"):
            d = json.loads(open(os.path.join(src, name)).read().replace('"/api/_definitions.json#', '"_definitions.json#'))
            d.pop("$id", None)
            json.dump(d, open(os.path.join(out + ".tmp", name), "w"))
    os.rename(out + ".tmp", out)
PY
fi

[ $# -gt 0 ] || set -- deploy/kubernetes/*.yaml
exec "$BIN" -strict -summary -kubernetes-version "$K8S_VERSION" \
  -schema-location "$SCHEMAS/{{.NormalizedKubernetesVersion}}-standalone{{.StrictSuffix}}/{{.ResourceKind}}{{.KindSuffix}}.json" "$@"
