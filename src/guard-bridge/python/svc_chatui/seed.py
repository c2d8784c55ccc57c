"""Seeding: install the service's functions and the packs' tools into Open WebUI's database
through Open WebUI's own Python model layer (open_webui.models), so its own rules (history,
access grants, specs) apply. Runs in the front end's Python with the front end's DATA_DIR /
DATABASE_URL, after the first admin signed up; idempotent across restarts.

Installs, owned by the first admin:
- function ``svc``       — the Pipe (``from svc_chatui.pipe import Pipe``), active;
- function ``svc_guard`` — the guard filter (``from svc_chatui.guard import Filter``), active
  and global;
- one tool per toolkit (tool id = toolkit id), a shim importing the toolkit module's Tools
  class narrowed to the declared methods, readable by every user (access grant user:*).
Tools this step installed earlier whose toolkit is gone are removed. It also writes the
front end's persistent config so the alternative providers stay off and users cannot add
their own tools.
"""

from __future__ import annotations

from .manifest import Toolkit

PIPE_ID = "svc"
GUARD_ID = "svc_guard"
MANAGED = "svc_managed"  # meta flag marking what this step installed
# Persistent-config keys (open_webui/config.py DEFAULT_CONFIG) forced off at every seed.
PROVIDER_CONFIG = {"openai.enable": False, "ollama.enable": False, "direct.enable": False}

PIPE_SOURCE = '''"""
title: svc
description: Models governed by svc (installed by svc; changes are overwritten at the next start)
"""
from svc_chatui.pipe import Pipe
'''

GUARD_SOURCE = '''"""
title: svc guard
description: Refuses turns while svc governance is unavailable and keeps only governed tools (installed by svc)
"""
from svc_chatui.guard import Filter
'''


class NoAdminYet(Exception):
    """Fresh database: nobody has signed up yet, so there is no owner for the functions."""


def tool_source(tk: Toolkit) -> str:
    declared = tuple(d.method for d in tk.tools)
    title = tk.name.replace("\n", " ").replace('"""', "")
    desc = (tk.description or f"Governed tools of {tk.name}").replace("\n", " ").replace('"""', "")
    return (
        '"""\n'
        f"title: {title}\n"
        f"description: {desc} (installed by svc from pack {tk.pack})\n"
        '"""\n'
        "from svc_chatui.toolkit import governed_tools\n\n"
        f"Tools = governed_tools({tk.module!r}, {declared!r})\n"
    )


async def _first_admin():
    from open_webui.models.users import Users

    first = await Users.get_first_user()
    if first is not None and first.role == "admin":
        return first
    admin = await Users.get_super_admin_user()
    if admin is None:
        raise NoAdminYet("no admin has signed up yet")
    return admin


async def _upsert_function(owner_id: str, fid: str, name: str, ftype: str, content: str, description: str, is_global: bool) -> str:
    from open_webui.models.functions import FunctionForm, FunctionMeta, Functions

    meta = FunctionMeta(description=description, manifest={}, **{MANAGED: True})
    existing = await Functions.get_function_by_id(fid)
    if existing is None:
        await Functions.insert_new_function(owner_id, ftype, FunctionForm(id=fid, name=name, content=content, meta=meta))
        action = "installed"
    elif existing.content != content or existing.type != ftype or existing.name != name:
        await Functions.update_function_by_id(fid, {"content": content, "type": ftype, "name": name, "meta": meta.model_dump()})
        action = "updated"
    else:
        action = "unchanged"
    current = await Functions.get_function_by_id(fid)
    if not current.is_active or bool(current.is_global) != is_global:
        await Functions.update_function_by_id(fid, {"is_active": True, "is_global": is_global})
        if action == "unchanged":
            action = "re-enabled"
    return action


async def _upsert_tool(owner_id: str, tk: Toolkit) -> str:
    from open_webui.models.tools import ToolForm, ToolMeta, Tools
    from open_webui.utils.plugin import load_tool_module_by_id
    from open_webui.utils.tools import get_tool_specs

    content = tool_source(tk)
    tools_instance, _frontmatter, _module = await load_tool_module_by_id(tk.id, content=content)
    specs = get_tool_specs(tools_instance)
    meta = ToolMeta(description=tk.description or tk.name, manifest={}, **{MANAGED: True, "svc_pack": tk.pack})
    grants = [{"principal_type": "user", "principal_id": "*", "permission": "read"}]
    existing = await Tools.get_tool_by_id(tk.id)
    if existing is None:
        form = ToolForm(id=tk.id, name=tk.name, content=content, meta=meta, access_grants=grants)
        await Tools.insert_new_tool(owner_id, form, specs)
        return "installed"
    if existing.content != content or existing.specs != specs or existing.name != tk.name:
        await Tools.update_tool_by_id(tk.id, {"content": content, "specs": specs, "name": tk.name, "meta": meta.model_dump()})
        return "updated"
    return "unchanged"


async def _remove_stale_tools(toolkits: list[Toolkit]) -> list[str]:
    from open_webui.models.tools import Tools

    keep = {tk.id for tk in toolkits}
    removed = []
    for tool in await Tools.get_tools():
        extra = tool.meta.model_dump() if tool.meta else {}
        if extra.get(MANAGED) and tool.id not in keep:
            await Tools.delete_tool_by_id(tool.id)
            removed.append(tool.id)
    return removed


MCP_CONNECTION_ID = "svc"  # tool id server:mcp:svc (guard.MCP_TOOL_ID)


def mcp_connection(url: str) -> dict:
    """svc's MCP gateway as an Open WebUI tool-server connection: every user may use it (what
    each is offered is svc policy), and Open WebUI forwards the user's own session token."""
    return {
        "url": url,
        "path": "",
        "type": "mcp",
        "auth_type": "session",
        "key": "",
        "config": {
            "enable": True,
            "access_grants": [{"principal_type": "user", "principal_id": "*", "permission": "read"}],
        },
        "info": {"id": MCP_CONNECTION_ID, "name": "svc", "description": "MCP tools governed by svc"},
    }


def with_svc_connection(connections: object, url: str) -> list:
    """The connections with svc's one replaced or added. Connections an admin added by hand are
    kept as they are: the guard never serves them, and `svc harness sync` reports them."""
    kept = [c for c in (connections if isinstance(connections, list) else []) if not (isinstance(c, dict) and (c.get("info") or {}).get("id") == MCP_CONNECTION_ID)]
    return [mcp_connection(url), *kept]


async def _enforce_mcp_connection() -> str | None:
    import os

    from open_webui.models.config import Config

    url = os.environ.get("SVC_MCP_GATEWAY_URL", "").strip()
    if not url:
        return None
    current = await Config.get("tool_server.connections", [])
    await Config.upsert({"tool_server.connections": with_svc_connection(current, url)})
    return url


async def _enforce_config() -> None:
    from open_webui.models.config import Config

    updates = dict(PROVIDER_CONFIG)
    perms = await Config.get("user.permissions")
    if isinstance(perms, dict):
        workspace = dict(perms.get("workspace") or {})
        if workspace.get("tools") or workspace.get("tools_import"):
            workspace["tools"] = False
            workspace["tools_import"] = False
            updates["user.permissions"] = {**perms, "workspace": workspace}
    await Config.upsert(updates)


def _same_layout_as_the_front_end() -> None:
    """`open-webui serve` (a pip install) sets FROM_INIT_PY, which moves Open WebUI's asset and
    data paths into the package; the seed must import open_webui the same way or its config
    module refuses to load. The official image (uvicorn from /app/backend) does not set it."""
    import importlib.util
    import os
    from pathlib import Path

    spec = importlib.util.find_spec("open_webui")
    if spec and spec.origin and (Path(spec.origin).parent / "frontend").is_dir():
        os.environ.setdefault("FROM_INIT_PY", "true")


async def seed(toolkits: list[Toolkit]) -> dict:
    """Install everything; returns what was done per id (for the log line)."""
    _same_layout_as_the_front_end()
    admin = await _first_admin()
    report = {
        PIPE_ID: await _upsert_function(admin.id, PIPE_ID, "svc", "pipe", PIPE_SOURCE, "Models governed by svc", False),
        GUARD_ID: await _upsert_function(
            admin.id, GUARD_ID, "svc guard", "filter", GUARD_SOURCE, "svc governance guard", True
        ),
    }
    for tk in toolkits:
        report[tk.id] = await _upsert_tool(admin.id, tk)
    for tid in await _remove_stale_tools(toolkits):
        report[tid] = "removed"
    await _enforce_config()
    if await _enforce_mcp_connection():
        report["server:mcp:svc"] = "configured"
    return {"owner": admin.id, "items": report}
