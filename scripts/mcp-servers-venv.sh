#!/usr/bin/env bash
# Creates (once) and caches the virtualenv of the real MCP servers the MCP tests run against:
# the official Python SDK `mcp` (its MCPServer, formerly FastMCP, served over Streamable HTTP by test/support/mcp/),
# two third-party stdio servers from PyPI, mcp-server-time and mcp-server-git, and the
# OpenTelemetry SDK with its OTLP/HTTP exporter (notes_server.py exports its spans with them), at
# ${SVC_MCP_SERVERS_VENV:-/var/cache/svc/mcp-servers-venv}. Idempotent and quick when the venv
# already holds these versions. Prints the venv's bin path.
set -euo pipefail

PACKAGES=("mcp==2.3.0" "mcp-server-time==2026.10.19" "mcp-server-git==2026.10.19" "opentelemetry-sdk==1.45.2" "opentelemetry-exporter-otlp-proto-http==1.45.2")
VENV=${SVC_MCP_SERVERS_VENV:-/var/cache/svc/mcp-servers-venv}
PY=${SVC_MCP_SERVERS_PYTHON:-$(command -v /usr/bin/python3.11 || command -v python3.11 || command -v python3)}
STAMP="$VENV/.svc-packages"

if [ -x "$VENV/bin/python" ] && [ -x "$VENV/bin/mcp-server-time" ] && [ -x "$VENV/bin/mcp-server-git" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "${PACKAGES[*]}" ]; then
  echo "$VENV/bin"
  exit 0
fi

command -v "$PY" >/dev/null 2>&1 || { echo "mcp-servers-venv: no python3 found" >&2; exit 1; }
echo "mcp-servers-venv: installing ${PACKAGES[*]} into $VENV (once)" >&2
mkdir -p "$(dirname "$VENV")"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip >&2
"$VENV/bin/python" -m pip install -q "${PACKAGES[@]}" >&2
"$VENV/bin/python" -c 'from mcp.server.mcpserver import MCPServer' || { echo "mcp-servers-venv: mcp is not importable after the install" >&2; exit 1; }
echo "${PACKAGES[*]}" >"$STAMP"
echo "$VENV/bin"
