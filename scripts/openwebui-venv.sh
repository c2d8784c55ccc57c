#!/usr/bin/env bash
# Creates (once) and caches the Open WebUI virtualenv the end-to-end suite and local runs use:
# open-webui==0.12.4 on python3.11 at ${SVC_OPENWEBUI_VENV:-/var/cache/svc/openwebui-venv}.
# Idempotent and quick when the venv already has that version. Prints the venv's bin path.
set -euo pipefail

OPENWEBUI_VERSION=0.12.4
# Outside $HOME: the container user (UID 10001) must be able to run it in the end-to-end suite.
VENV=${SVC_OPENWEBUI_VENV:-/var/cache/svc/openwebui-venv}
# A system Python, not one under /root (pyenv): the venv links to its interpreter.
PY=${SVC_OPENWEBUI_PYTHON:-$(command -v /usr/bin/python3.11 || command -v python3.11)}

installed() {
  [ -x "$VENV/bin/python" ] && [ -x "$VENV/bin/open-webui" ] &&
    [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("open-webui"))' 2>/dev/null)" = "$OPENWEBUI_VERSION" ]
}

if installed; then
  echo "$VENV/bin"
  exit 0
fi

command -v "$PY" >/dev/null 2>&1 || { echo "openwebui-venv: $PY not found (Open WebUI $OPENWEBUI_VERSION needs Python 3.11)" >&2; exit 1; }
echo "openwebui-venv: installing open-webui==$OPENWEBUI_VERSION into $VENV (several GB, once)" >&2
mkdir -p "$(dirname "$VENV")"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip >&2
# pip -q is silent for minutes: say how far it got every 20 s. pip downloads and unpacks into its
# temporary directory and moves everything into the venv only at the end, so count both.
PIP_TMP=$(mktemp -d "${TMPDIR:-/tmp}/openwebui-pip.XXXXXX")
( while sleep 20; do echo "openwebui-venv: installing… $(du -sch "$VENV" "$PIP_TMP" 2>/dev/null | tail -1 | cut -f1) so far" >&2; done ) &
ticker=$!
trap 'kill "$ticker" 2>/dev/null || true; rm -rf "$PIP_TMP"' EXIT
TMPDIR="$PIP_TMP" "$VENV/bin/python" -m pip install -q "open-webui==$OPENWEBUI_VERSION" >&2
kill "$ticker" 2>/dev/null || true
installed || { echo "openwebui-venv: open-webui $OPENWEBUI_VERSION is not importable after the install" >&2; exit 1; }
echo "$VENV/bin"
