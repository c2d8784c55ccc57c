#!/usr/bin/env bash
# Installs everything svc's build and tests need on a fresh Debian machine, idempotently:
# Bun (npm package `bun`), the JavaScript dependencies, the Debian packages the tests use,
# and Python test packages. Open WebUI for the end-to-end suite is installed by
# scripts/openwebui-venv.sh (cached between runs).
#   bash scripts/setup.sh          everything the build and the tests need
#   bash scripts/setup.sh --run    only what running svc needs (scripts/start.sh): Bun, the
#                                  JavaScript dependencies, python3.11-venv, curl, openssl
set -euo pipefail
cd "$(dirname "$0")/.."
RUN_ONLY=""
[ "${1:-}" = "--run" ] && RUN_ONLY=1

BUN_VERSION=1.4.5
# python3.11-venv: the Open WebUI venv is made from the system Python (readable by UID 10001).
# postgresql: the server the control-plane suites run against a second time.
# prometheus: the real scraper of the metrics test (its service is not used; tests start their own).
# rsyslog, rsyslog-gnutls: the real syslog-over-TLS receiver of the SIEM sink tests (started unprivileged per test).
APT_PACKAGES=(age chromium python3.11-venv postgresql prometheus rsyslog rsyslog-gnutls)
[ -n "$RUN_ONLY" ] && APT_PACKAGES=(python3.11-venv curl openssl)

need_apt=()
for p in "${APT_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || need_apt+=("$p"); done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need_apt[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if ! command -v bun >/dev/null 2>&1 || [ "$(bun --version)" != "$BUN_VERSION" ]; then
  echo "setup: installing bun@$BUN_VERSION from npm"
  npm install -g --silent "bun@$BUN_VERSION" >/dev/null
fi

bun install --frozen-lockfile >/dev/null
[ -n "$RUN_ONLY" ] && exit 0

python3 -c 'import pytest' 2>/dev/null || python3 -m pip install -q pytest
# The OTLP protobuf definitions the SIEM OTLP sink's bodies are checked against (test/support/otlp_validate.py).
python3 -c 'import opentelemetry.proto.collector.logs.v1.logs_service_pb2' 2>/dev/null || python3 -m pip install -q opentelemetry-proto
