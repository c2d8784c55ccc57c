"""Open WebUI's own MCP client (open_webui.utils.mcp.client.MCPClient, 0.12.x), driven the way
its chat middleware drives it: connect to a URL with the user's session token as a bearer
(auth_type "session"), list the tool specs, call tools. The event caller stands in for the
user's browser session (__event_call__): every event it is asked to deliver is printed.

usage: python owui_client.py <url> <jwt> [<tool> <json-args>]...
prints one JSON line per step: {"tools": [...]}, {"call": name, "result"|"error": ...},
{"event": <event the user's session received>}
Run with the Open WebUI venv's Python.
"""

import asyncio
import json
import os
import sys
import tempfile

os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix="owui-mcp-client-"))
os.environ.setdefault("WEBUI_SECRET_KEY", "unused-by-the-client")

from open_webui.utils.mcp.client import MCPClient  # noqa: E402


def out(doc):
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


async def main(url, token, steps):
    async def event_caller(event):
        out({"event": event})
        return None  # the user closed the dialog (Open WebUI then answers "cancel")

    client = MCPClient(event_caller=event_caller, server_name="svc")
    try:
        await client.connect(url, headers={"Authorization": f"Bearer {token}"})
    except BaseException as e:  # noqa: BLE001
        out({"connect_error": f"{type(e).__name__}: {e}"})
        return
    try:
        out({"tools": await client.list_tool_specs()})
        for name, args in steps:
            try:
                out({"call": name, "result": await client.call_tool(name, json.loads(args))})
            except Exception as e:  # noqa: BLE001
                out({"call": name, "error": str(e)})
    finally:
        await client.disconnect()


if __name__ == "__main__":
    argv = sys.argv[1:]
    asyncio.run(main(argv[0], argv[1], list(zip(argv[2::2], argv[3::2]))))
