#!/usr/bin/env bash
# Runs every test suite of svc from a fresh machine: set-up, build, TypeScript unit and
# cross-process tests (on SQLite, then the control plane's again on a real PostgreSQL server),
# the Python package's tests, and the end-to-end suite against a real Open WebUI. Ends with one
# line `N passed, N failed` summing every suite.
#   bash scripts/test.sh            everything
#   SVC_TEST_SKIP_E2E=1 bash ...    everything but the Open WebUI end-to-end suite
#   SVC_TEST_SKIP_IMAGE=1 bash ...  everything but the container image build and boot (scripts/image-test.sh)
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0
status=0
last_rc=0
mkdir -p test-artifacts

count_bun() { # log file → adds "N pass" / "N fail" of bun test's summary
  local p f
  p=$(grep -Eo '^ *[0-9]+ pass' "$1" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  f=$(grep -Eo '^ *[0-9]+ fail' "$1" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  # A runner that died, or failed outside any test (an error between tests), counts as a failure.
  if [ "$last_rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f))
  echo "suite $2: $p passed, $f failed"
}

count_pytest() {
  local p f e
  p=$(grep -Eo '[0-9]+ passed' "$1" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  f=$(grep -Eo '[0-9]+ failed' "$1" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  e=$(grep -Eo '[0-9]+ error' "$1" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  if [ "$last_rc" -ne 0 ] && [ "$f" -eq 0 ] && [ "$e" -eq 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f + e))
  echo "suite $2: $p passed, $((f + e)) failed"
}

count_plain() { # log file, name → adds the "N passed, N failed" line a script prints last
  local line p f
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -1)
  p=$(echo "$line" | grep -Eo '^[0-9]+' || echo 0)
  f=$(echo "$line" | grep -Eo '[0-9]+ failed' | grep -Eo '[0-9]+' || echo 0)
  [ -n "$p" ] || p=0; [ -n "$f" ] || f=0
  if [ "$last_rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f))
  echo "suite $2: $p passed, $f failed"
}

run_suite() { # name, command...
  local name=$1; shift
  local log="test-artifacts/$name.log"
  echo "== $name"
  "$@" >"$log" 2>&1
  local rc=$?
  last_rc=$rc
  tail -n 40 "$log"
  if [ $rc -ne 0 ]; then
    status=1
    # The log is overwritten by the next run: show why each failed test failed (bun prints a
    # test's error above its "(fail)" line), so a flake on CI can be diagnosed from its output.
    if grep -q '^(fail)' "$log"; then echo "-- $name: the failures' output"; grep -B 40 '^(fail)' "$log" | head -n 400; fi
  fi
  return $rc
}

echo "== build"
if ! bun run build >test-artifacts/build.log 2>&1; then
  cat test-artifacts/build.log; echo "0 passed, 1 failed"; exit 1
fi
export SVC_BIN="$PWD/dist/svc"

run_suite typecheck bunx tsc --noEmit -p . || { failed=$((failed + 1)); echo "suite typecheck: failed"; }
# Lint (eslint.config.js), the whole tree, type-aware: the promise rules the type checker cannot
# give, type-only imports marked, no unused code; one pass or one failure (~1 min of CPU).
if run_suite lint bunx eslint --max-warnings 0 .; then passed=$((passed + 1)); echo "suite lint: passed"; else failed=$((failed + 1)); echo "suite lint: failed"; fi
# One formatter (biome.json): a file it would change fails the suite (`bun run format` fixes).
if run_suite format bunx biome format .; then passed=$((passed + 1)); echo "suite format: passed"; else failed=$((failed + 1)); echo "suite format: failed"; fi
# Import cycles (.dependency-cruiser.cjs): none, type imports included. Run
# on Bun: dependency-cruiser refuses the machine's Node 20.
if run_suite cycles bunx --bun depcruise src --output-type err; then passed=$((passed + 1)); echo "suite cycles: passed"; else failed=$((failed + 1)); echo "suite cycles: failed"; fi
# Unused files, exports and dependencies (knip.jsonc): tests, benches and scripts count as users.
if run_suite unused bunx knip; then passed=$((passed + 1)); echo "suite unused: passed"; else failed=$((failed + 1)); echo "suite unused: failed"; fi
# Cross-process suites start real servers: give each test room, never rely on timing.
BUN_TEST=(bun test --timeout 60000)
# The real MCP servers the MCP tests run against (src/proxy/mcp, test/e2e), cached once.
bash scripts/mcp-servers-venv.sh >test-artifacts/mcp-servers-venv.log 2>&1 || { tail -20 test-artifacts/mcp-servers-venv.log; failed=$((failed + 1)); }
# The OpenTelemetry Collector the tracing tests run (src/proxy/mcp/call-trace.test.ts, e2e
# scenario 19), built once from the Go module proxy: before the suites, not inside a test's set-up.
bash scripts/otelcol.sh >test-artifacts/otelcol.log 2>&1 || { tail -20 test-artifacts/otelcol.log; failed=$((failed + 1)); }
run_suite unit "${BUN_TEST[@]}" src test/support test/cel-spec examples; count_bun test-artifacts/unit.log unit
if [ -d test/integration ]; then run_suite integration "${BUN_TEST[@]}" test/integration; count_bun test-artifacts/integration.log integration; fi
# schemathesis against the control plane's OpenAPI document on a real server (issue 20): a
# bounded run (test/api-fuzz/run.ts; ~3,500 requests), no 5xx and no answer off the document.
if ST_BIN=$(bash scripts/schemathesis-venv.sh 2>test-artifacts/schemathesis-venv.log); then
  run_suite schemathesis bun test/api-fuzz/run.ts "$ST_BIN"; count_plain test-artifacts/schemathesis.log schemathesis
else
  tail -20 test-artifacts/schemathesis-venv.log; failed=$((failed + 1)); status=1; echo "suite schemathesis: the venv could not be made"
fi
# The control plane again on PostgreSQL, its scale-out store: its unit suites and every
# cross-process suite (each control plane they start gets a fresh database).
# The PostgreSQL server is stopped at the end only when this run started it (another run on
# the machine may be using one that was already up).
pg_was_running=0
bash scripts/postgres-test-server.sh status >/dev/null 2>&1 && pg_was_running=1
stop_started_servers() { [ "$pg_was_running" = 1 ] || bash scripts/postgres-test-server.sh stop >/dev/null 2>&1 || true; }
trap stop_started_servers EXIT
if PG_URL=$(bash scripts/postgres-test-server.sh 2>test-artifacts/postgres-server.log); then
  export SVC_TEST_POSTGRES_URL="$PG_URL"
  bash scripts/postgres-test-server.sh clean # what earlier runs left, before and after
  run_suite unit-postgres "${BUN_TEST[@]}" src/controlplane; count_bun test-artifacts/unit-postgres.log unit-postgres
  run_suite integration-postgres "${BUN_TEST[@]}" test/integration; count_bun test-artifacts/integration-postgres.log integration-postgres
  bash scripts/postgres-test-server.sh clean
  unset SVC_TEST_POSTGRES_URL
else
  cat test-artifacts/postgres-server.log; failed=$((failed + 1)); status=1; echo "suite postgres: the test server did not start"
fi
if [ -d src/guard-bridge/python/tests ]; then
  run_suite python python3 -m pytest -q src/guard-bridge/python/tests; count_pytest test-artifacts/python.log python
fi
if [ -z "${SVC_TEST_SKIP_E2E:-}" ] && [ -d test/e2e ] && ls test/e2e/*.test.ts >/dev/null 2>&1; then
  bash scripts/openwebui-venv.sh >test-artifacts/openwebui-venv.log 2>&1 || { tail -20 test-artifacts/openwebui-venv.log; failed=$((failed + 1)); }
  run_suite e2e bun test --timeout 600000 test/e2e; count_bun test-artifacts/e2e.log e2e
fi

# The runtime image, built with buildah and booted with podman (issue 18; needs root).
if [ -z "${SVC_TEST_SKIP_IMAGE:-}" ]; then
  run_suite image bash scripts/image-test.sh; count_plain test-artifacts/image.log image
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ $status -eq 0 ]
