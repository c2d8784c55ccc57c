#!/usr/bin/env bash
# The README's run command: set up, build, and start a local control plane on embedded SQLite.
# The first run creates the first owner and prints the next steps.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bun run build >/dev/null
DATA_DIR="${SVC_CP_DATA_DIR:-$PWD/.svc-data}"
export SVC_CP_DATA_DIR="$DATA_DIR"
mkdir -p "$DATA_DIR"
if [ ! -f "$DATA_DIR/controlplane.db" ]; then
  ./dist/svc controlplane bootstrap-admin --email "${SVC_OWNER_EMAIL:-owner@example.com}" --token-out "$DATA_DIR/owner-api-token"
  echo "  Or, for the CLI without a browser: svc login --url http://127.0.0.1:8420 --with-token < $DATA_DIR/owner-api-token"
fi
exec ./dist/svc controlplane serve
