#!/usr/bin/env bash
# Creates (once) and caches the Open WebUI virtualenv the end-to-end suite and local runs use:
# open-webui==0.12.4 on python3.11 at ${SVC_OPENWEBUI_VENV:-/var/cache/svc/openwebui-venv}.
# Idempotent and quick when the venv already has that version. Prints the venv's bin path.
# `--installed` answers only whether it is there already (exit 0), installing nothing.
set -euo pipefail

OPENWEBUI_VERSION=0.12.4
UV_VERSION=0.13.9
# Outside $HOME: the container user (UID 10001) must be able to run it in the end-to-end suite.
VENV=${SVC_OPENWEBUI_VENV:-/var/cache/svc/openwebui-venv}
# A system Python, not one under /root (pyenv): the venv links to its interpreter.
PY=${SVC_OPENWEBUI_PYTHON:-$(command -v /usr/bin/python3.11 || command -v python3.11)}

installed() {
  [ -x "$VENV/bin/python" ] && [ -x "$VENV/bin/open-webui" ] &&
    [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("open-webui"))' 2>/dev/null)" = "$OPENWEBUI_VERSION" ]
}

# --installed: only say (exit 0 or 1) whether the venv already holds that version; install nothing.
if [ "${1:-}" = "--installed" ]; then installed; exit; fi

# What Open WebUI imports when ENABLE_OTEL is on (its Docker image has them, its pip package does
# not): the tracing end-to-end test turns it on (docs/tracing.md). Three instrumentations have no
# release of the SDK's 0.66b2 yet; their 0.66b1 is installed without its pins (it runs on 0.66b2).
OTEL_PACKAGES=("opentelemetry-exporter-otlp-proto-http==1.45.2" "opentelemetry-instrumentation-fastapi==0.66b2" "opentelemetry-instrumentation-httpx==0.66b2" "opentelemetry-instrumentation-redis==0.66b2" "opentelemetry-instrumentation-requests==0.66b2" "opentelemetry-instrumentation-system-metrics==0.66b2")
OTEL_NODEPS=("opentelemetry-instrumentation-aiohttp-client==0.66b1" "opentelemetry-instrumentation-logging==0.66b1" "opentelemetry-instrumentation-sqlalchemy==0.66b1")
otel_installed() {
  (cd /tmp && WEBUI_SECRET_KEY=check "$VENV/bin/python" -c 'import open_webui.utils.telemetry.setup' >/dev/null 2>&1)
}
install_otel() {
  otel_installed && return 0
  echo "openwebui-venv: installing Open WebUI's OpenTelemetry instrumentation (once)" >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${OTEL_PACKAGES[@]}" >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps "${OTEL_NODEPS[@]}" >&2
  otel_installed || { echo "openwebui-venv: Open WebUI's telemetry setup does not import after the install" >&2; exit 1; }
}

if installed; then
  install_otel
  echo "$VENV/bin"
  exit 0
fi

command -v "$PY" >/dev/null 2>&1 || { echo "openwebui-venv: $PY not found (Open WebUI $OPENWEBUI_VERSION needs Python 3.11)" >&2; exit 1; }
echo "openwebui-venv: installing open-webui==$OPENWEBUI_VERSION into $VENV (several GB, once)" >&2
mkdir -p "$(dirname "$VENV")"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
# uv (from PyPI, into the venv itself) resolves the same pins as pip from the same index but
# downloads in parallel and unpacks natively: pip took 17 min on the shared machine
# (docs/first-run.md). Its download cache is a temporary directory beside the venv (same file
# system, so files are hard-linked into the venv, not copied) and is removed afterwards: the
# venv itself is what is cached. SVC_OPENWEBUI_PIP=1 installs with pip as before.
UV_TMP=$(mktemp -d "$(dirname "$VENV")/openwebui-install.XXXXXX")
( while sleep 20; do echo "openwebui-venv: installing… $(du -sch "$VENV" "$UV_TMP" 2>/dev/null | tail -1 | cut -f1) so far" >&2; done ) &
ticker=$!
trap 'kill "$ticker" 2>/dev/null || true; rm -rf "$UV_TMP"' EXIT
if [ -n "${SVC_OPENWEBUI_PIP:-}" ]; then
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  TMPDIR="$UV_TMP" "$VENV/bin/python" -m pip install -q "open-webui==$OPENWEBUI_VERSION" >&2
else
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION" >&2
  UV_CACHE_DIR="$UV_TMP/cache" TMPDIR="$UV_TMP" "$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" "open-webui==$OPENWEBUI_VERSION" >&2
fi
kill "$ticker" 2>/dev/null || true
installed || { echo "openwebui-venv: open-webui $OPENWEBUI_VERSION is not importable after the install" >&2; exit 1; }
install_otel
echo "$VENV/bin"
