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
  error text.

Only governed tools are offered to the model: tool specs in ``body["tools"]`` whose names are
not declared methods of the packs' toolkits (built-in or ungoverned tools) are dropped.
"""

from __future__ import annotations

from typing import AsyncIterator

from . import _local, governor, manifest


class GovernanceUnavailable(Exception):
    """The proxy is not reachable or not ready: the model call was not sent."""


def upstream_model(model_id: str) -> str:
    """'svc.gpt-4o' → 'gpt-4o': the front end prefixes the function id and a dot."""
    return model_id.split(".", 1)[1] if "." in model_id else model_id


def governed_tools(tools: object, names: frozenset[str]) -> list:
    if not isinstance(tools, list):
        return []
    out = []
    for spec in tools:
        fn = spec.get("function") if isinstance(spec, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else spec.get("name") if isinstance(spec, dict) else None
        if isinstance(name, str) and name in names:
            out.append(spec)
    return out


def governor_safe(text: str) -> str:
    return governor._URL_RE.sub("[link withheld]", text)


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
        if "tools" in payload:
            _, names = manifest.governed()
            kept = governed_tools(payload.get("tools"), names)
            if kept:
                payload["tools"] = kept
            else:
                payload.pop("tools", None)
                payload.pop("tool_choice", None)
        stream = bool(payload.get("stream"))
        try:
            resp = await _local.request(
                "POST", "/v1/chat/completions", body=payload, headers=_local.user_headers(__user__), timeout=_local.STREAM_IDLE_TIMEOUT
            )
        except _local.ProxyUnavailable as e:
            raise GovernanceUnavailable(f"Governance unavailable: the svc proxy cannot be reached ({e}); the request was not sent.") from e
        if resp.status >= 300:
            raw = await resp.read()
            if _local.error_code(raw) == governor.UNLINKED:
                # An unlinked user: the link goes to that user alone as a notification; the
                # chat shows exactly the spec's refusal text.
                await governor._notify_claim_link(__event_emitter__, _local.claim_url(raw))
                raise Exception(governor.UNLINKED_TEXT)
            raise Exception(governor_safe(_local.error_text(resp.status, raw)))
        if not stream or "text/event-stream" not in resp.headers.get("content-type", "text/event-stream"):
            doc = await resp.json(_local.STREAM_IDLE_TIMEOUT)
            return doc
        return self._relay(resp)

    async def _relay(self, resp: _local.Response) -> AsyncIterator[str]:
        async for line in resp.lines():
            # Only data lines are events; comments (": keep-alive"), blank separators and the
            # upstream's [DONE] are dropped: the front end adds its own final chunk and [DONE].
            if not line.startswith("data:"):
                continue
            if line[5:].strip() == "[DONE]":
                continue
            yield line
