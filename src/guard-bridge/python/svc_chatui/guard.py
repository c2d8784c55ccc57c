"""The ``svc_guard`` filter (function id ``svc_guard``, active and global).

Its inlet runs before every model call:

- when the proxy daemon is not ready it raises, so the turn fails with a governance-unavailable
  message and the model is never called (spec §7);
- it refuses models that are not served by the svc Pipe (an alternative provider switched on
  by hand in the admin settings stays unusable);
- it keeps in ``body["tool_ids"]`` only the toolkits the service governs (the tools the boot
  step seeded from the packs), and drops tool servers and terminals, which it cannot govern.
"""

from __future__ import annotations

from . import _local, manifest

PIPE_ID = "svc"
# svc's MCP gateway as Open WebUI names its tools (seed.MCP_CONNECTION_ID): the one tool server served.
MCP_TOOL_ID = "server:mcp:svc"


class GovernanceUnavailable(Exception):
    """The proxy daemon is not ready: the request was not sent."""


def _served_by_pipe(body: dict, model: dict | None) -> bool:
    ids = [str(body.get("model") or "")]
    if isinstance(model, dict):
        ids.append(str(model.get("id") or ""))
        info = model.get("info") if isinstance(model.get("info"), dict) else {}
        ids.append(str(info.get("base_model_id") or ""))
    return any(i.startswith(f"{PIPE_ID}.") for i in ids)


def governed_tool_ids(tool_ids: object, governed: frozenset[str]) -> list[str]:
    """Only the packs' toolkits and svc's MCP gateway (when svc run configured it); any other
    tool server, an MCP connection an admin added by hand included, is dropped."""
    if not isinstance(tool_ids, list):
        return []
    allowed = governed | {MCP_TOOL_ID} if _mcp_gateway() else governed
    return [t for t in tool_ids if isinstance(t, str) and t in allowed]


def _mcp_gateway() -> bool:
    import os

    return bool(os.environ.get("SVC_MCP_GATEWAY_URL", "").strip())


class Filter:
    def __init__(self):
        self.file_handler = False

    async def inlet(self, body: dict, __user__: dict | None = None, __model__: dict | None = None) -> dict:
        ready, reason = await _local.readiness()
        if not ready:
            raise GovernanceUnavailable(
                f"Governance unavailable: the svc proxy is not ready ({reason}). The request was not sent; try again shortly."
            )
        if not _served_by_pipe(body, __model__):
            raise GovernanceUnavailable(
                f"Model {body.get('model')!r} is not served through svc governance; choose a model of the svc provider."
            )
        ids, _ = manifest.governed()
        if "tool_ids" in body:
            body["tool_ids"] = governed_tool_ids(body.get("tool_ids"), ids)
        body.pop("tool_servers", None)
        body.pop("terminal_id", None)
        meta = body.get("metadata")
        if isinstance(meta, dict):
            if "tool_ids" in meta:
                meta["tool_ids"] = governed_tool_ids(meta.get("tool_ids"), ids)
            meta.pop("tool_servers", None)
        return body
