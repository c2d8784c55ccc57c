#!/usr/bin/env bash
# Creates (once) and caches the virtualenv holding schemathesis, which the `schemathesis` suite
# of scripts/test.sh runs against the control plane's OpenAPI document, at
# ${SVC_SCHEMATHESIS_VENV:-/var/cache/svc/schemathesis-venv}. Idempotent and quick when the venv
# already holds this version. Prints the venv's bin path.
set -euo pipefail

PACKAGES=("schemathesis==4.32.5")
VENV=${SVC_SCHEMATHESIS_VENV:-/var/cache/svc/schemathesis-venv}
PY=${SVC_SCHEMATHESIS_PYTHON:-$(command -v /usr/bin/python3.11 || command -v python3.11 || command -v python3)}
STAMP="$VENV/.svc-packages"

if [ -x "$VENV/bin/schemathesis" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "${PACKAGES[*]}" ]; then
  echo "$VENV/bin"
  exit 0
fi

command -v "$PY" >/dev/null 2>&1 || { echo "schemathesis-venv: no python3 found" >&2; exit 1; }
echo "schemathesis-venv: installing ${PACKAGES[*]} into $VENV (once)" >&2
mkdir -p "$(dirname "$VENV")"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip >&2
"$VENV/bin/python" -m pip install -q "${PACKAGES[@]}" >&2
"$VENV/bin/schemathesis" --version >&2 || { echo "schemathesis-venv: schemathesis does not run after the install" >&2; exit 1; }
echo "${PACKAGES[*]}" >"$STAMP"
echo "$VENV/bin"
