#!/usr/bin/env bash
# The README's run command: a local control plane on embedded SQLite plus one runtime (the real
# Open WebUI governed by svc, with the example tool pack), on embedded defaults.
#   first run: creates the first owner, an agent, an installation and its runtime credential,
#              and prints the next steps (model profile, policies, users)
#   later runs: start both again with the same state
# State lives in .svc-data/ (or $SVC_LOCAL_DIR). SVC_START_NO_RUNTIME=1 starts the control
# plane only. The runtime runs as UID 10001 like the container, so it needs root (setpriv).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bun run build >/dev/null

ROOT="${SVC_LOCAL_DIR:-$PWD/.svc-data}"
CP_DIR="$ROOT/controlplane"
RT_DIR="$ROOT/runtime"
CP_PORT="${SVC_CP_PORT:-8420}"
CHAT_PORT="${SVC_CHAT_PORT:-8080}"
CP_URL="http://127.0.0.1:$CP_PORT"
OWNER_EMAIL="${SVC_OWNER_EMAIL:-owner@example.com}"
SVC="$PWD/dist/svc"
mkdir -p "$CP_DIR"
chmod 700 "$ROOT" "$CP_DIR"

json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

if [ ! -f "$CP_DIR/controlplane.db" ]; then
  "$SVC" controlplane bootstrap-admin --email "$OWNER_EMAIL" --data-dir "$CP_DIR" --token-out "$CP_DIR/owner-api-token" >"$CP_DIR/bootstrap.txt"
fi

pids=()
stop() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop INT TERM EXIT

SVC_CP_DATA_DIR="$CP_DIR" SVC_CP_LISTEN="127.0.0.1:$CP_PORT" "$SVC" controlplane serve &
pids+=($!)
for _ in $(seq 1 100); do curl -fsS "$CP_URL/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "$CP_URL/healthz" >/dev/null || { echo "start: the control plane did not come up at $CP_URL" >&2; exit 1; }

export SVC_CONTROL_PLANE_URL="$CP_URL"
SVC_TOKEN="$(cat "$CP_DIR/owner-api-token")"
export SVC_TOKEN
ORG="$(curl -fsS -H "authorization: Bearer $SVC_TOKEN" "$CP_URL/api/v1/me" | json "['organization']['id']")"

# First run: the agent (console/API only, the CLI has none), the installation, its credential.
if [ ! -f "$ROOT/runtime-token" ]; then
  AGENT="$(curl -fsS -X POST -H "authorization: Bearer $SVC_TOKEN" -H 'content-type: application/json' \
    -d '{"name":"Chat assistant","workspace":"default"}' "$CP_URL/api/v1/organizations/$ORG/agents" | json "['id']")"
  INST="$("$SVC" bot init --platform chatui --name local-chat --agent "$AGENT" --workspace default --json | json "['id']")"
  (umask 077 && "$SVC" bot credential --installation "$INST" --workspace default >"$ROOT/runtime-token")
  echo "$AGENT" >"$ROOT/agent-id"
fi
AGENT="$(cat "$ROOT/agent-id")"

cat <<EOF

svc control plane: $CP_URL  (console: sign in as $OWNER_EMAIL, password in $CP_DIR/initial-owner-password)
CLI without a browser: svc login --url $CP_URL --with-token < $CP_DIR/owner-api-token
EOF

if [ -n "${SVC_START_NO_RUNTIME:-}" ] || [ "$(id -u)" != 0 ]; then
  [ "$(id -u)" != 0 ] && echo "The runtime runs as UID 10001 like the container: start this script as root, or deploy the image (docs/deploy.md)."
  wait "${pids[0]}"
  exit 0
fi

VENV_BIN="$(bash scripts/openwebui-venv.sh)"
# The container user must read what the runtime runs: copy the binary and the example pack.
mkdir -p "$RT_DIR/state" "$RT_DIR/packs"
cp "$SVC" "$RT_DIR/svc"
cp -r examples/acme_tools "$RT_DIR/packs/"
chown -R 10001:10001 "$RT_DIR"
chmod 755 "$ROOT"
CHAT_ADMIN_PASSWORD_FILE="$CP_DIR/chat-admin-password"
[ -f "$CHAT_ADMIN_PASSWORD_FILE" ] || (umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$CHAT_ADMIN_PASSWORD_FILE")
[ -f "$ROOT/chat-secret" ] || (umask 077 && head -c 32 /dev/urandom | base64 >"$ROOT/chat-secret")

SVC_RUNTIME_TOKEN="$(cat "$ROOT/runtime-token")" \
SVC_RUNTIME_CONTROL_PLANE_URL="$CP_URL" \
CHATUI_SECRET_KEY="$(cat "$ROOT/chat-secret")" \
SVC_STATE_DIR="$RT_DIR/state" \
SVC_PROXY_AUDIT="$RT_DIR/state/audit-spool" \
SVC_PROXY_PATH="$RT_DIR/svc" \
SVC_CHATUI_TOOL_PACKS=acme_tools \
PYTHONPATH="$RT_DIR/packs" \
SVC_CHATUI_HOST=127.0.0.1 SVC_CHATUI_PORT="$CHAT_PORT" \
SVC_CHATUI_COMMAND="$VENV_BIN/open-webui serve --host {host} --port {port}" \
SVC_CHATUI_PYTHON="$VENV_BIN/python" \
WEBUI_ADMIN_EMAIL="$OWNER_EMAIL" WEBUI_ADMIN_PASSWORD="$(cat "$CHAT_ADMIN_PASSWORD_FILE")" \
  setpriv --reuid=10001 --regid=10001 --clear-groups "$RT_DIR/svc" run &
pids+=($!)

cat <<EOF
Chat front end (Open WebUI, governed by svc): http://127.0.0.1:$CHAT_PORT  (starting; about 30 s)
  admin: $OWNER_EMAIL, password in $CHAT_ADMIN_PASSWORD_FILE

Next steps (the agent is $AGENT; the example pack registers crm.* and tickets.* tools):
  1. A model profile for your provider (the key is sealed to the runtime, never sent in clear):
       svc model-profiles create --display-name main --endpoint https://api.example.com/v1 \\
         --auth-type api_key --default-model <model> --agent $AGENT --workspace default < key.txt
  2. Who may call what:
       svc policies create --name chat --src-pattern '*' --dst-pattern model:invoke --effect permit --agent-id $AGENT --workspace default
       svc policies create --name lookup --src-pattern '*' --dst-pattern tool:crm.lookup_customer --effect permit --agent-id $AGENT --workspace default
  3. Chat users: each one follows the sign-in link svc sends on their first governed call.
Ctrl-C stops both.
EOF
wait -n "${pids[@]}"
