#!/usr/bin/env bash
# The README's run command: a local control plane on embedded SQLite plus one runtime (the real
# Open WebUI governed by svc, with the example tool pack), on embedded defaults.
#   bash scripts/start.sh           your own model provider: the next steps say how to add it
#   bash scripts/start.sh --demo    (or SVC_DEMO=1) a local demo model that calls tools, trusted
#                                   automatically, a model profile and policies: a governed chat
#                                   with no provider account
#   first run: creates the first owner, an agent, an installation and its runtime credential
#   later runs: start everything again with the same state (nothing is installed or created again)
# State and logs live in .svc-data/ (or $SVC_LOCAL_DIR). SVC_START_NO_RUNTIME=1 starts the
# control plane only. The runtime runs as UID 10001 like the container, so it needs root.
# The terminal shows progress and, once everything is ready, where to go; each server's own
# output goes to a log file in the state directory. Ctrl-C stops everything once, cleanly, and
# the last line says so: "start: stopped (unshipped N)", N the audit records left in the spool.
set -euo pipefail
cd "$(dirname "$0")/.."

DEMO=${SVC_DEMO:-}
for arg in "$@"; do
  case "$arg" in
    --demo) DEMO=1 ;;
    -h | --help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "start: unknown argument $arg (try --demo or --help)" >&2; exit 2 ;;
  esac
done

say() { printf '%s\n' "$@"; }
# The words of a stop, never fatal. After a Ctrl-C with the output piped (`| tee log`), the
# reader got the same Ctrl-C: straight to the terminal, once. Otherwise to stdout, or to the
# terminal when stdout's reader is gone.
interrupted=""
tell() {
  if [ -n "$interrupted" ] && [ ! -t 1 ] && { : >/dev/tty; } 2>/dev/null; then
    printf '%s\n' "$@" >/dev/tty 2>/dev/null || true
  else
    { printf '%s\n' "$@" || printf '%s\n' "$@" >/dev/tty; } 2>/dev/null || true
  fi
}
started=$SECONDS
ROOT="${SVC_LOCAL_DIR:-$PWD/.svc-data}"
if [ -x dist/svc ] && command -v bun >/dev/null 2>&1; then
  say "start: checking what svc needs and building dist/svc…"
else
  say "start: installing what svc needs (first run: Bun, Debian packages; a minute or two)…"
fi
bash scripts/setup.sh --run
mkdir -p "$ROOT/logs"
bun run build >"$ROOT/logs/build.log" 2>&1 || { cat "$ROOT/logs/build.log" >&2; exit 1; }

CP_DIR="$ROOT/controlplane"
RT_DIR="$ROOT/runtime"
LOGS="$ROOT/logs"
CP_PORT="${SVC_CP_PORT:-8420}"
CHAT_PORT="${SVC_CHAT_PORT:-8080}"
DEMO_PORT="${SVC_DEMO_PORT:-8443}"
CP_URL="http://127.0.0.1:$CP_PORT"
OWNER_EMAIL="${SVC_OWNER_EMAIL:-owner@example.com}"
SVC="$PWD/dist/svc"
mkdir -p "$CP_DIR" "$LOGS"
chmod 700 "$ROOT" "$CP_DIR"
# The KMS master key lives apart from the database (docs/controlplane.md "Master key"): a copy of
# controlplane/ (a backup) must not carry the key that unwraps its secrets. A state dir made
# before keeps its key where it is (the control plane warns and says how to move it).
if [ ! -f "$CP_DIR/master.key" ]; then
  mkdir -p "$ROOT/keys" && chmod 700 "$ROOT/keys"
  export SVC_CP_MASTER_KEY_FILE="$ROOT/keys/master.key"
  [ -f "$SVC_CP_MASTER_KEY_FILE" ] || (umask 077 && head -c 32 /dev/urandom | base64 >"$SVC_CP_MASTER_KEY_FILE")
fi

json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

if [ ! -f "$CP_DIR/controlplane.db" ]; then
  "$SVC" controlplane bootstrap-admin --email "$OWNER_EMAIL" --data-dir "$CP_DIR" --token-out "$CP_DIR/owner-api-token" >"$CP_DIR/bootstrap.txt" 2>>"$LOGS/controlplane.log"
fi

# Each server runs in a session of its own (setsid): Ctrl-C in this terminal reaches this
# script alone, which stops every server once with SIGTERM. (Otherwise the terminal's SIGINT
# reaches every process of the group as well, and `svc run`, signalled twice, would stop the
# front end at once.)
# The runtime stops first and alone (it ships its last audit records to the control plane
# while it drains), then the rest.
# Ctrl-C with the output piped (`… | tee log`) kills the reader too: a message written before
# the servers are signalled would kill this script of SIGPIPE and leave them all running. So a
# stop signals first and prints after, with SIGPIPE ignored and `set -e` off, and its last line
# goes to the terminal itself when the pipe is gone (tell).
pids=()
RT_PID=""
stopping=0
stop() {
  trap '' PIPE INT TERM
  trap - EXIT
  set +e
  [ "$stopping" = 1 ] && return
  stopping=1
  [ ${#pids[@]} -gt 0 ] || return
  if [ -n "$RT_PID" ]; then
    kill -TERM "$RT_PID" 2>/dev/null
    tell "" "start: stopping (the runtime ships its last audit records first)…"
    while kill -0 "$RT_PID" 2>/dev/null; do sleep 0.2; done
  fi
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  [ -n "$RT_PID" ] || tell "" "start: stopping…"
  wait 2>/dev/null
  if [ -n "$RT_PID" ]; then
    unshipped=$(grep -oE '"event":"stopped","unshipped":[0-9]+' "$RT_LOG" 2>/dev/null | tail -1 | grep -oE '[0-9]+$')
    tell "start: stopped (unshipped ${unshipped:-unknown: see $RT_LOG})"
  else
    tell "start: stopped"
  fi
}
trap 'interrupted=1; stop; exit 130' INT
trap 'stop; exit 143' TERM
# A dead reader without a Ctrl-C (the pager closed): stop too, rather than die and orphan the servers.
trap 'stop; exit 141' PIPE
trap stop EXIT

# The demo lets a SIEM sink reach a receiver on this machine (loopback only; docs/siem.md), and
# its model's endpoint is on loopback, which the control plane accepts only when told (docs/mcp.md).
cp_env=(SVC_CP_DATA_DIR="$CP_DIR" SVC_CP_LISTEN="127.0.0.1:$CP_PORT")
[ -n "$DEMO" ] && cp_env+=(SVC_CP_ALLOW_LOOPBACK_SINKS=1 SVC_CP_ALLOW_PRIVATE_OUTBOUND=1)
env "${cp_env[@]}" setsid "$SVC" controlplane serve >>"$LOGS/controlplane.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -fsS "$CP_URL/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "$CP_URL/healthz" >/dev/null || { tail -n 20 "$LOGS/controlplane.log" >&2; echo "start: the control plane did not come up at $CP_URL (log: $LOGS/controlplane.log)" >&2; exit 1; }

export SVC_CONTROL_PLANE_URL="$CP_URL"
SVC_TOKEN="$(cat "$CP_DIR/owner-api-token")"
export SVC_TOKEN
ORG="$(curl -fsS -H "authorization: Bearer $SVC_TOKEN" "$CP_URL/api/v1/me" | json "['organization']['id']")"

# First run: the agent (console/API only, the CLI has none), the installation, its credential.
first_run=0
if [ ! -f "$ROOT/runtime-token" ]; then
  first_run=1
  AGENT="$(curl -fsS -X POST -H "authorization: Bearer $SVC_TOKEN" -H 'content-type: application/json' \
    -d '{"name":"Chat assistant","workspace":"default"}' "$CP_URL/api/v1/organizations/$ORG/agents" | json "['id']")"
  INST="$("$SVC" bot init --platform chatui --name local-chat --agent "$AGENT" --workspace default --json | json "['id']")"
  (umask 077 && "$SVC" bot credential --installation "$INST" --workspace default >"$ROOT/runtime-token" 2>/dev/null)
  echo "$AGENT" >"$ROOT/agent-id"
fi
AGENT="$(cat "$ROOT/agent-id")"

# Demo mode: the demo model over HTTPS with a CA of its own (made once), trusted by the runtime
# through SVC_PROXY_CA_FILE; once, a model profile for it and the policies of a first chat.
DEMO_CA=""
if [ -n "$DEMO" ]; then
  D="$ROOT/demo"
  if [ ! -f "$D/server.pem" ]; then
    mkdir -p "$D" && chmod 755 "$D"
    ( cd "$D"
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 -subj "/CN=svc demo CA" \
        -keyout ca.key -out ca.pem -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost -keyout server.key -out server.csr
      printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >ext.cnf
      openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 -extfile ext.cnf -out server.pem
      chmod 600 ca.key server.key; chmod 644 ca.pem ) >/dev/null 2>&1 || { echo "start: making the demo provider's certificate failed (openssl)" >&2; exit 1; }
  fi
  DEMO_PROVIDER_CERT="$D/server.pem" DEMO_PROVIDER_KEY="$D/server.key" DEMO_PROVIDER_PORT="$DEMO_PORT" \
    setsid bun examples/demo-provider/server.ts >>"$LOGS/demo-provider.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do curl -fsS --cacert "$D/ca.pem" "https://127.0.0.1:$DEMO_PORT/v1/models" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -fsS --cacert "$D/ca.pem" "https://127.0.0.1:$DEMO_PORT/v1/models" >/dev/null ||
    { echo "start: the demo provider did not come up on port $DEMO_PORT (log: $LOGS/demo-provider.log)" >&2; exit 1; }
  DEMO_CA="$D/ca.pem"
  if [ ! -f "$D/configured" ]; then
    "$SVC" model-profiles create --display-name "svc demo" --endpoint "https://127.0.0.1:$DEMO_PORT/v1" --auth-type none \
      --default-model svc-demo --agent "$AGENT" --workspace default >/dev/null
    # (Quiet: the CLI warns that the tools are not registered yet, which the runtime does next.)
    policy() { local err; err=$("$SVC" policies create --name "$1" --src-pattern '*' --dst-pattern "$2" --effect permit --agent-id "$AGENT" --workspace default 2>&1 >/dev/null) || { echo "$err" >&2; exit 1; }; }
    policy demo-chat model:invoke
    policy demo-lookup tool:crm.lookup_customer
    policy demo-tickets tool:tickets.list_open
    touch "$D/configured"
  fi
fi

say "" "svc control plane: $CP_URL  (console: sign in as $OWNER_EMAIL, password in $CP_DIR/initial-owner-password)"
# The audit's signing key, as bootstrap printed it: pin it where the audit is verified.
if [ "$first_run" = 1 ]; then
  say "Audit checkpoint-signing key (svc audit verify trusts only a pinned key; keep this line):"
  grep -A2 '^  ed25519:' "$CP_DIR/bootstrap.txt" | sed 's/^/  /' || true
fi
say "CLI: $SVC  (signed in here through SVC_CONTROL_PLANE_URL/SVC_TOKEN; elsewhere: $SVC login --url $CP_URL --with-token < $CP_DIR/owner-api-token)"

if [ -n "${SVC_START_NO_RUNTIME:-}" ] || [ "$(id -u)" != 0 ]; then
  [ "$(id -u)" != 0 ] && say "The runtime runs as UID 10001 like the container: start this script as root, or deploy the image (docs/deploy.md)."
  [ "$first_run" = 1 ] || say "A later run on the same state: nothing was created again."
  say "Ctrl-C stops it. Log: $LOGS/controlplane.log"
  wait "${pids[0]}"
  exit 0
fi

if bash scripts/openwebui-venv.sh --installed; then
  say "start: Open WebUI (from its cached venv)…"
else
  say "start: Open WebUI (first run: installed once into a cached venv, several minutes)…"
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

RT_LOG="$LOGS/runtime.log"
: >"$RT_LOG"
# Open WebUI migrates a new database at its first start (a minute or more); later starts are quicker.
first_chat_start=""
[ -d "$RT_DIR/state/chatui" ] || first_chat_start=1
rt_env=(
  SVC_RUNTIME_TOKEN="$(cat "$ROOT/runtime-token")"
  SVC_RUNTIME_CONTROL_PLANE_URL="$CP_URL"
  CHATUI_SECRET_KEY="$(cat "$ROOT/chat-secret")"
  SVC_STATE_DIR="$RT_DIR/state"
  SVC_PROXY_AUDIT="$RT_DIR/state/audit-spool"
  SVC_PROXY_PATH="$RT_DIR/svc"
  # Locally, what the CLI changes reaches the proxy within seconds (the default is 1 minute).
  SVC_PROXY_POLL_INTERVAL="${SVC_PROXY_POLL_INTERVAL:-5s}"
  SVC_CHATUI_TOOL_PACKS=acme_tools
  PYTHONPATH="$RT_DIR/packs"
  SVC_CHATUI_HOST=127.0.0.1 SVC_CHATUI_PORT="$CHAT_PORT"
  SVC_CHATUI_COMMAND="$VENV_BIN/open-webui serve --host {host} --port {port}"
  SVC_CHATUI_PYTHON="$VENV_BIN/python"
  WEBUI_ADMIN_EMAIL="$OWNER_EMAIL" WEBUI_ADMIN_PASSWORD="$(cat "$CHAT_ADMIN_PASSWORD_FILE")"
)
[ -n "$DEMO_CA" ] && rt_env+=(SVC_PROXY_CA_FILE="$DEMO_CA")
# The demo model listens on loopback, which the runtime calls only when told (docs/mcp.md "Outbound URLs").
[ -n "$DEMO_CA" ] && rt_env+=(SVC_PROXY_ALLOW_PRIVATE_OUTBOUND=127.0.0.1)
setsid env "${rt_env[@]}" setpriv --reuid=10001 --regid=10001 --clear-groups "$RT_DIR/svc" run >>"$RT_LOG" 2>&1 &
RT_PID=$!
pids+=($RT_PID)

# Ready when the runtime has seeded the front end; a progress line every 15 s until then.
waited=0
until grep -q "svc functions seeded" "$RT_LOG"; do
  if ! kill -0 "$RT_PID" 2>/dev/null; then
    say "" "start: the runtime stopped before it was ready; the end of $RT_LOG:"
    tail -n 25 "$RT_LOG" | cut -c1-400
    exit 1
  fi
  sleep 1
  waited=$((waited + 1))
  if [ $((waited % 15)) = 0 ]; then
    step=$(grep -oE '"event":"(tool sync: registered[^"]*|starting the front end)' "$RT_LOG" | tail -1 | cut -d'"' -f4 || true)
    say "start: waiting for Open WebUI to start and be seeded (${waited} s${first_chat_start:+; its first start migrates a new database})${step:+ — $step}"
  fi
done

# Demo mode: the chat admin's Open WebUI account is linked to the owner's svc user, so the
# first chat works at once (model calls, like tool calls, are decided for a linked user only).
if [ -n "$DEMO" ]; then
  api() { curl -fsS -X "$1" -H "authorization: Bearer $SVC_TOKEN" -H 'content-type: application/json' ${3:+-d "$3"} "$CP_URL/api/v1/organizations/$ORG$2"; }
  chat_id="$(curl -fsS -X POST -H 'content-type: application/json' \
    -d "{\"email\":\"$OWNER_EMAIL\",\"password\":\"$(cat "$CHAT_ADMIN_PASSWORD_FILE")\"}" \
    "http://127.0.0.1:$CHAT_PORT/api/v1/auths/signin" | json "['id']")"
  api POST /users "{\"email\":\"$OWNER_EMAIL\",\"display_name\":\"Owner\"}" >/dev/null 2>&1 || true
  owner_user="$("$SVC" users resolve --email "$OWNER_EMAIL" --json | json "['id']")"
  api POST "/users/$owner_user/remote-identities" "{\"platform\":\"chatui\",\"remote_user_id\":\"$chat_id\"}" >/dev/null 2>&1 || true
  # Ready means the proxy decides with that link: wait for the bundle that carries it.
  rt_token="$(cat "$ROOT/runtime-token")"
  rev="$(curl -fsS -H "authorization: Bearer $rt_token" "$CP_URL/api/v1/runtime/policy-bundle?version=1" | json "['revision']")"
  for _ in $(seq 1 120); do
    have="$(curl -fsS --unix-socket "$RT_DIR/state/proxy.sock" -H "authorization: Bearer $rt_token" http://svc-proxy/v1/policy 2>/dev/null | json ".get('policy_revision') or 0" 2>/dev/null || echo 0)"
    [ "$have" -ge "$rev" ] && break
    sleep 0.5
  done
fi

say "" "Ready after $((SECONDS - started)) s."
say "Chat front end (Open WebUI, governed by svc): http://127.0.0.1:$CHAT_PORT"
say "  admin: $OWNER_EMAIL, password in $CHAT_ADMIN_PASSWORD_FILE"
say "Logs: $LOGS/ (runtime.log: svc run and Open WebUI; controlplane.log${DEMO:+; demo-provider.log})"

if [ "$first_run" = 1 ] && [ -n "$DEMO" ]; then
  # The README's steps, one text for both (the end-to-end test follows them there), printed with
  # this run's addresses, state directory and svc path.
  say "" "Try it (demo mode):"
  awk '/^### Try it \(demo mode\)$/ { f = 1; next } f && /^### / { exit } f && /^1\. / { p = 1 } p' README.md |
    sed -e "s#http://127.0.0.1:8080#http://127.0.0.1:$CHAT_PORT#g" -e "s#http://127.0.0.1:8420#$CP_URL#g" \
      -e "s#\`\.svc-data/#\`$ROOT/#g" -e "s#\`svc #\`$SVC #g" -e 's/^./  &/'
elif [ "$first_run" = 1 ]; then
  cat <<EOF

Next steps (the agent is $AGENT; the example pack registers crm.* and tickets.* tools):
  1. A model profile for your provider (the key is sealed to the runtime, never sent in clear):
       $SVC model-profiles create --display-name main --endpoint https://api.example.com/v1 \\
         --auth-type api_key --default-model <model> --agent $AGENT --workspace default < key.txt
     (No provider account? Stop with Ctrl-C and run: bash scripts/start.sh --demo)
  2. Who may call what:
       $SVC policies create --name chat --src-pattern '*' --dst-pattern model:invoke --effect permit --agent-id $AGENT --workspace default
       $SVC policies create --name lookup --src-pattern '*' --dst-pattern tool:crm.lookup_customer --effect permit --agent-id $AGENT --workspace default
  3. Chat users: on their first governed call svc sends each one a sign-in link (README "Linking chat users").
EOF
fi
[ "$first_run" = 1 ] || say "" "A later run on the same state: nothing was created again.${DEMO:+ What to try: README, \"Try it (demo mode)\".}"
say "" "Ctrl-C stops everything."
wait -n "${pids[@]}"
say "" "start: a server stopped by itself (its log is in $LOGS/); stopping the rest"
