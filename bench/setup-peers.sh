#!/usr/bin/env bash
# Installs (once) and caches the benchmark's peers from their registries, pinned:
#   OPA      go install github.com/open-policy-agent/opa@$OPA_VERSION (the Go module proxy)
#            into ${SVC_BENCH_PEERS:-/var/cache/svc/bench-peers}/opa-$OPA_VERSION/bin
#   LiteLLM  pip install 'litellm[proxy]==$LITELLM_VERSION' into its own venv there
#   wrk      apt-get install wrk (Debian's package): the load client of the 304 bundle polls
#   mcp-proxy pip install 'mcp-proxy==$MCP_PROXY_VERSION' into its own venv: the bare MCP stdio bridge (issue 34)
#   ContextForge pip install 'mcp-contextforge-gateway==$CONTEXTFORGE_VERSION' into its own venv: IBM's MCP
#            gateway (issue 34); 1.0.7 is the newest release for Python 3.11 (1.1.0 needs Python >= 3.12).
#            The mcp-stdio suite runs it in front of an mcp-proxy, so it needs mcp-proxy too
# Cedar comes from npm as a devDependency (@cedar-policy/cedar-wasm, `bun install`).
# Idempotent and quick when the cache holds these versions. Prints one line per peer:
# `opa <path>`, `litellm <path>`, `mcp-proxy <path>`, `contextforge <path>` and `wrk <path>`; a peer that cannot be installed is reported on stderr and
# left out (the bench then notes it as skipped).
set -uo pipefail

OPA_VERSION=v1.22.2
LITELLM_VERSION=1.106.0
MCP_PROXY_VERSION=0.13.0
CONTEXTFORGE_VERSION=1.0.7
ROOT=${SVC_BENCH_PEERS:-/var/cache/svc/bench-peers}
PY=${SVC_BENCH_PYTHON:-$(command -v /usr/bin/python3.11 || command -v python3.11 || command -v python3)}
mkdir -p "$ROOT"

opa_bin="$ROOT/opa-$OPA_VERSION/bin/opa"
if [ ! -x "$opa_bin" ]; then
  if command -v go >/dev/null 2>&1; then
    echo "setup-peers: go install github.com/open-policy-agent/opa@$OPA_VERSION (once, a few minutes)" >&2
    GOBIN="$ROOT/opa-$OPA_VERSION/bin" GOFLAGS=-mod=mod go install "github.com/open-policy-agent/opa@$OPA_VERSION" >&2 || echo "setup-peers: OPA not installed" >&2
  else
    echo "setup-peers: no go toolchain; OPA left out" >&2
  fi
fi
[ -x "$opa_bin" ] && echo "opa $opa_bin"

# A peer from PyPI, pinned, in a venv of its own: pip_peer <label> <dir> <requirement> <binary> [<name printed>]
pip_peer() {
  local label=$1 dir=$2 req=$3 bin=$4 name=${5:-$1}
  if [ ! -x "$dir/bin/$bin" ]; then
    echo "setup-peers: pip install '$req' into $dir (once)" >&2
    { [ -x "$dir/bin/python" ] || "$PY" -m venv "$dir"; } >&2 &&
      "$dir/bin/python" -m pip install -q "$req" >&2 || echo "setup-peers: $label not installed" >&2
  fi
  [ -x "$dir/bin/$bin" ] && echo "$name $dir/bin/$bin"
}

pip_peer LiteLLM "$ROOT/litellm-$LITELLM_VERSION" "litellm[proxy]==$LITELLM_VERSION" litellm litellm
pip_peer mcp-proxy "$ROOT/mcp-proxy-$MCP_PROXY_VERSION" "mcp-proxy==$MCP_PROXY_VERSION" mcp-proxy
pip_peer ContextForge "$ROOT/contextforge-$CONTEXTFORGE_VERSION" "mcp-contextforge-gateway==$CONTEXTFORGE_VERSION" mcpgateway contextforge

if ! command -v wrk >/dev/null 2>&1; then
  echo "setup-peers: apt-get install wrk (once)" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends wrk >/dev/null; } >&2 || echo "setup-peers: wrk not installed" >&2
fi
command -v wrk >/dev/null 2>&1 && echo "wrk $(command -v wrk)"
exit 0
