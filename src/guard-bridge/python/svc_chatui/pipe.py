"""The Pipe: the front end's only model provider (function id ``svc``).

``pipes()`` lists the models of the proxy's /v1/models (those the agent's model profile
supplies and policy permits); while the proxy is not ready the list is empty. ``pipe()``
forwards the chat to the proxy's /v1/chat/completions with the front-end user in the
x-svc-user-* headers, and relays the answer:

- streaming: every upstream ``data:`` line is yielded raw as it arrives (Open WebUI passes
  lines starting with ``data:`` through unchanged), so ``delta.tool_calls`` reach the front
  end's native tool loop, which then runs the governed tools and calls the Pipe again;
- not streaming: the completion JSON is returned as is;
- a refusal (or an unreachable proxy) raises, which the front end shows as the assistant's
  error text; except a budget or rate-limit refusal (``svc.budget_exceeded``,
  ``svc.rate_limited``): its text is returned as a normal assistant message, since the chat
  itself is fine and goes on once the limit allows;
- a notice from the proxy (``x-svc-notice``, e.g. 80 % of a budget used) is shown to that
  user alone as a front-end notification.

Only governed tools are offered to the model: tool specs in ``body["tools"]`` whose names are
not declared methods of the packs' toolkits (built-in or ungoverned tools) are dropped. And
only calls of those offered tools reach the front end: the front end runs whatever tool the
answer names if it has one by that name (its built-in tools such as ``search_chats`` too), so
a tool call in the answer (streamed ``delta.tool_calls`` or a completion's
``message.tool_calls``) naming any other tool is dropped, as the guard drops ungoverned tool
ids (spec §1.9: the front end never serves tools the service cannot govern).
"""

from __future__ import annotations

import json
import os
import re
import logging
from typing import AsyncIterator
from urllib.parse import unquote

from . import _local, governor, manifest

log = logging.getLogger("svc_chatui.pipe")


# Refusals that are answered as the assistant's message rather than as an error.
QUOTA_CODES = frozenset({"svc.budget_exceeded", "svc.rate_limited"})
NOTICE_HEADER = "x-svc-notice"


async def notify(emitter, text: str, level: str = "warning") -> bool:
    """A notification to the user of this chat alone (Open WebUI's room ``user:{id}``)."""
    if emitter is None or not text:
        return False
    try:
        await emitter({"type": "notification", "data": {"type": level, "content": text}})
        return True
    except Exception as e:
        log.warning("svc pipe: could not deliver a notification (%s)", type(e).__name__)
        return False


class GovernanceUnavailable(Exception):
    """The proxy is not reachable or not ready: the model call was not sent."""


def upstream_model(model_id: str) -> str:
    """'svc.gpt-4o' → 'gpt-4o': the front end prefixes the function id and a dot."""
    return model_id.split(".", 1)[1] if "." in model_id else model_id


def _spec_name(spec: object) -> str | None:
    fn = spec.get("function") if isinstance(spec, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else spec.get("name") if isinstance(spec, dict) else None
    return name if isinstance(name, str) else None


# A tool of svc's MCP gateway as Open WebUI names it for the model: "svc_" (the connection id
# and "_") + the governed `<server>.<method>`, the method being the MCP tool's name as svc maps
# it (letters, digits, `_` and `-`: `everything.get-sum`, `fs.files--2eread`; contract/mcp-names.ts).
# Open WebUI's own tools never have a dot; the gateway offered only what svc policy permits, and
# decides every call again.
_MCP_SPEC_NAME = re.compile(r"svc_[A-Za-z][A-Za-z0-9_-]*\.[A-Za-z0-9_-]+")


def _mcp_gateway_tool(name: str | None) -> bool:
    return bool(name and _MCP_SPEC_NAME.fullmatch(name) and os.environ.get("SVC_MCP_GATEWAY_URL", "").strip())


def governed_tools(tools: object, names: frozenset[str]) -> list:
    if not isinstance(tools, list):
        return []
    return [spec for spec in tools if _spec_name(spec) in names or _mcp_gateway_tool(_spec_name(spec))]


class ToolCallFilter:
    """Removes, from a model's answer, the tool calls of tools that were not offered (governed).

    Streamed calls arrive in fragments: the first fragment of a call (per choice and per
    ``index``) names the function, later ones add arguments. The verdict is taken on the first
    name and applies to every later fragment of that call; a fragment without a known verdict
    is dropped (fail closed), and so is a later fragment that renames the call (the front end
    would take the new name). Only tool names are logged, never arguments.
    """

    def __init__(self, allowed: frozenset[str] | set[str]):
        self.allowed = frozenset(allowed)
        self._verdicts: dict[tuple, tuple[str, bool]] = {}
        self.dropped: list[str] = []

    def _drop(self, name: str) -> None:
        if name not in self.dropped:
            self.dropped.append(name)
            log.warning("svc pipe: dropped the model's call of %r: not a tool svc governs in this chat", name)

    def _keep(self, key: tuple | None, name: object) -> bool:
        named = isinstance(name, str) and name != ""
        if key is None:  # a whole call without an index
            if named and name not in self.allowed:
                self._drop(name)
            return named and name in self.allowed
        verdict = self._verdicts.get(key)
        if verdict is None:
            if not named:
                return False
            ok = name in self.allowed
            self._verdicts[key] = (name, ok)
            if not ok:
                self._drop(name)
            return ok
        first, ok = verdict
        if named and name != first:
            self._verdicts[key] = (first, False)
            self._drop(name)
            return False
        return ok

    def _calls(self, choice: object, calls: object) -> list:
        out = []
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, dict):
                continue
            fn = call.get("function") if isinstance(call.get("function"), dict) else {}
            index = call.get("index")
            key = (choice, "tool", index) if isinstance(index, int) else None
            if self._keep(key, fn.get("name")):
                out.append(call)
        return out

    def filter(self, doc: object) -> bool:
        """Filter one chunk or completion in place; True when something was removed."""
        choices = doc.get("choices") if isinstance(doc, dict) else None
        changed = False
        for pos, choice in enumerate(choices if isinstance(choices, list) else []):
            if not isinstance(choice, dict):
                continue
            cidx = choice.get("index", pos)
            for part_key in ("delta", "message"):
                part = choice.get(part_key)
                if not isinstance(part, dict):
                    continue
                if "tool_calls" in part:
                    calls = part["tool_calls"]
                    kept = self._calls(cidx, calls)
                    if calls is not None and kept != calls:
                        changed = True
                        if kept:
                            part["tool_calls"] = kept
                        else:
                            del part["tool_calls"]
                if "function_call" in part:  # the legacy functions API: one call per choice
                    fc = part["function_call"]
                    if not self._keep((cidx, "function"), fc.get("name") if isinstance(fc, dict) else None):
                        del part["function_call"]
                        changed = True
        return changed

    def line(self, line: str) -> str:
        """One ``data:`` line of a stream, with ungoverned calls removed."""
        payload = line[5:].strip()
        if "tool_calls" not in payload and "function_call" not in payload:
            return line  # cannot carry a call: relayed untouched
        try:
            doc = json.loads(payload)
        except ValueError:
            return line
        return f"data: {json.dumps(doc, separators=(',', ':'), ensure_ascii=False)}" if self.filter(doc) else line


def governor_safe(text: str) -> str:
    return governor._URL_RE.sub("[link withheld]", text)


TASK_HEADER = "x-svc-task"
_TASK_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def task_headers(metadata: dict | None) -> dict[str, str]:
    """Open WebUI's background task (title, tags, follow-ups…) this call is for, so the audit can
    mark it: metadata["task"] is set by Open WebUI's task routes, absent on a user's own turn."""
    task = metadata.get("task") if isinstance(metadata, dict) else None
    task = str(task) if task is not None else ""
    return {TASK_HEADER: task} if _TASK_RE.match(task) else {}


class Pipe:
    def __init__(self):
        self.type = "manifold"

    async def pipes(self) -> list[dict]:
        try:
            resp = await _local.request("GET", "/v1/models", timeout=5.0)
            if resp.status != 200:
                resp.close()
                return []
            doc = await resp.json(5.0)
        except _local.ProxyUnavailable:
            return []
        data = doc.get("data") if isinstance(doc, dict) else doc
        models = []
        for m in data if isinstance(data, list) else []:
            if isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"]:
                models.append({"id": m["id"], "name": str(m.get("name") or m["id"])})
        return models

    async def pipe(self, body: dict, __user__: dict | None = None, __metadata__: dict | None = None, __event_emitter__=None):
        payload = dict(body)
        payload["model"] = upstream_model(str(body.get("model", "")))
        offered: set[str] = set()
        if "tools" in payload:
            _, names = manifest.governed()
            kept = governed_tools(payload.get("tools"), names)
            offered = {n for n in map(_spec_name, kept) if n}
            if kept:
                payload["tools"] = kept
            else:
                payload.pop("tools", None)
                payload.pop("tool_choice", None)
        calls = ToolCallFilter(offered)
        stream = bool(payload.get("stream"))
        try:
            resp = await _local.request(
                "POST", "/v1/chat/completions", body=payload, headers={**_local.user_headers(__user__), **task_headers(__metadata__)}, timeout=_local.STREAM_IDLE_TIMEOUT
            )
        except _local.ProxyUnavailable as e:
            raise GovernanceUnavailable(f"Governance unavailable: the svc proxy cannot be reached ({e}); the request was not sent.") from e
        if resp.status >= 300:
            raw = await resp.read()
            if _local.error_code(raw) == governor.UNLINKED:
                # An unlinked user: the link goes to that user alone as a notification; the
                # chat shows the spec's refusal text, saying that a link was sent when it was.
                sent = await governor._notify_claim_link(__event_emitter__, _local.claim_url(raw))
                raise Exception(governor.unlinked_text(sent))
            if _local.error_code(raw) == governor.DISABLED:
                # Told they are disabled (never unlinked: no claim link goes out, it would not help).
                raise Exception(governor.refusal_text(governor.DISABLED, "", _local.error_text(resp.status, raw)))
            if _local.error_code(raw) in QUOTA_CODES:
                return _local.error_text(resp.status, raw)
            raise Exception(governor_safe(_local.error_text(resp.status, raw)))
        notice = resp.headers.get(NOTICE_HEADER)
        if notice:
            await notify(__event_emitter__, unquote(notice))
        if not stream or "text/event-stream" not in resp.headers.get("content-type", "text/event-stream"):
            doc = await resp.json(_local.STREAM_IDLE_TIMEOUT)
            calls.filter(doc)
            return doc
        return self._relay(resp, calls)

    async def _relay(self, resp: _local.Response, calls: ToolCallFilter) -> AsyncIterator[str]:
        async for line in resp.lines():
            # Only data lines are events; comments (": keep-alive"), blank separators and the
            # upstream's [DONE] are dropped: the front end adds its own final chunk and [DONE].
            if not line.startswith("data:"):
                continue
            if line[5:].strip() == "[DONE]":
                continue
            yield calls.line(line)
