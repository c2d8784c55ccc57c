"""The governor: what a tool pack's Tools methods call so that every governed call is decided,
audited and, only on permit, run.

    from svc_chatui import governor

    class Tools:
        async def update_customer(self, customer_id: str, email: str,
                                  __user__: dict = None, __event_emitter__=None, __metadata__: dict = None) -> str:
            \"\"\"Change a customer's email address.\"\"\"
            return await governor.run(
                "crm.update",                                    # exactly the declared name
                {"customer_id": customer_id, "email": email},    # audited (encrypted or digest only)
                lambda: crm_client.update(customer_id, email),   # runs only on permit
                __user__=__user__, __event_emitter__=__event_emitter__, __metadata__=__metadata__,
            )

``run(name, args, fn, *, __user__=None, __event_emitter__=None, __metadata__=None, payload=None)``

- asks the proxy (POST /v1/tools/decide) for a decision on ``tool:<name>`` for the front-end
  user in ``__user__``;
- on permit calls ``fn()`` (a plain or async callable taking no arguments; a plain one runs in
  a worker thread), reports the outcome (POST /v1/tools/outcome: ``ok`` with exit code 0, or
  ``error`` with the exit code of a raised ToolError, else 1) and returns what ``fn`` returned;
  a ToolError becomes the text ``Error: <message>``, any other exception is re-raised;
- on refusal returns ``{"error": <the refusal text>}`` (spec §7: ``tool_not_registered: …``,
  ``Refused (svc.denied): …``, or ``Refused (identity.unlinked)``, the text unchanged; svc's own
  ``Refused (identity.disabled): …`` tells a user of a disabled service user so); ``fn``
  never runs. Open WebUI marks a tool result whose ``error`` field is set as a failed call
  (a red cross, status ``failed``), not a green check, and hands the model the same text;
- for an unlinked user, sends the one-time claim link to that user alone through
  ``__event_emitter__`` as a dialog whose primary action opens it in a new tab and that stays
  until dismissed (Open WebUI emits it to that user's sessions only and saves it nowhere,
  claim_dialog.py); the link never goes into
  the return value (the model's context), the chat, or a log; the refusal then says a link
  was sent: ``Refused (identity.unlinked): a one-time link to link your chat account was sent
  to you …``;
- fails closed: when the proxy cannot be reached, returns
  ``{"error": "Refused (governance.unavailable): …"}`` and ``fn`` never runs.

``payload`` is content passed along with the call (a code body, a script, a prompt) that the
audit record should carry encrypted like the arguments.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
from typing import Any, Awaitable, Callable

from . import _local, claim_dialog

log = logging.getLogger("svc_chatui.governor")

TOOL_NOT_REGISTERED = "tool_not_registered"
DENIED = "svc.denied"
UNLINKED = "identity.unlinked"
# svc's own code (beside the spec's): the chat account is linked to a service user who is disabled.
DISABLED = "identity.disabled"
UNAVAILABLE = "governance.unavailable"
# The refusal seen by the model or user for an unlinked front-end user, as spec §7 writes it.
UNLINKED_TEXT = "Refused (identity.unlinked)"
# ... and what follows it when the claim link reached the user (the link itself never does).
LINK_SENT = ": a one-time link to link your chat account was sent to you (open it from the dialog in the chat window), then ask again"
# What a user of a disabled service user reads when the proxy gave no text of its own: they are
# told they are disabled, not unlinked (a claim link would not help them).
DISABLED_TEXT = "Refused (identity.disabled): the service user this chat account is linked to is disabled; ask an administrator of svc to enable it"
_URL_RE = re.compile(r"https?://\S+")


class ToolError(Exception):
    """Raise from a tool body to report a failed call with an exit code and a short message."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


def _frontend_user(user: dict | None) -> dict | None:
    if not isinstance(user, dict) or not user.get("id"):
        return None
    out = {"id": str(user["id"])}
    for key in ("email", "name", "role"):
        if isinstance(user.get(key), str) and user[key]:
            out[key] = user[key]
    return out


def unlinked_text(link_sent: bool) -> str:
    """The spec's text (§7), followed, when the link reached the user, by a note that it did
    (never the link itself, which only the user sees)."""
    return UNLINKED_TEXT + (LINK_SENT if link_sent else "")


def failed(text: str) -> dict:
    """A tool result Open WebUI shows as a failed call (``_is_tool_result_error``: a non-empty
    ``error`` field), carrying the refusal text unchanged."""
    return {"error": text}


def refusal_text(code: str, name: str, message: str | None = None) -> str:
    """The text the model sees for a refused call. Never carries a URL (claim links stay out)."""
    detail = _URL_RE.sub("[link withheld]", message).strip() if message else ""
    if code == UNLINKED:
        # The spec's text (§7); run() adds that a link was sent when it was.
        return UNLINKED_TEXT
    if code == DISABLED:
        return detail if detail.startswith("Refused (identity.disabled)") else DISABLED_TEXT
    if code == TOOL_NOT_REGISTERED:
        if detail.startswith(TOOL_NOT_REGISTERED):
            return detail
        return f"{TOOL_NOT_REGISTERED}: the tool {name} is not registered for this installation" + (f" ({detail})" if detail else "")
    if code == DENIED:
        if detail.startswith("Refused (svc.denied)"):
            return detail
        return f"Refused (svc.denied): {detail or f'no policy permits tool:{name}'}; the tool did not run"
    if code == UNAVAILABLE:
        return f"Refused (governance.unavailable): {detail or 'the svc proxy is not reachable'}; the tool {name} did not run"
    return f"Refused ({code}): {detail or 'the call was not permitted'}; the tool {name} did not run"


CLAIM_TITLE = claim_dialog.TITLE


def claim_notification(claim_url: str) -> dict:
    """The front-end event carrying the claim link: a dialog whose primary action opens the link
    in a new tab (claim_dialog.py: why it is drawn with an ``execute`` event, not Open WebUI's
    ``confirmation``). Open WebUI sends it to the room ``user:<id>`` of the user whose request
    it is (that user's open sessions) and stores it nowhere: not in the chat, not in the
    model's context."""
    return claim_dialog.claim_dialog_event(claim_url)


async def _notify_claim_link(emitter, claim_url: str) -> bool:
    if not claim_url:
        return False
    if emitter is None:
        log.warning("svc governor: an unlinked user's claim link was not delivered: the tool method did not pass __event_emitter__ to governor.run")
        return False
    try:
        await emitter(claim_notification(claim_url))
        return True
    except Exception as e:  # the link itself is never logged
        log.warning("svc governor: could not deliver the claim-link notification (%s)", type(e).__name__)
        return False


async def _call(fn: Callable[[], Any]) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn()
    result = await asyncio.to_thread(fn)
    if inspect.isawaitable(result):
        result = await result
    return result


async def _report(record_id: str, outcome: str, exit_code: int) -> None:
    try:
        status, _ = await _local.post_json(
            "/v1/tools/outcome", {"record_id": record_id, "outcome": outcome, "exit_code": exit_code}
        )
        if status >= 300:
            log.warning("svc governor: outcome for record %s not recorded (HTTP %s)", record_id, status)
    except _local.ProxyUnavailable as e:
        log.warning("svc governor: outcome for record %s not recorded (%s)", record_id, e)


def _tool_span(name: str):
    """The pack tool's call as an OpenTelemetry span (`execute_tool <name>`, GenAI conventions),
    the child of Open WebUI's current span when OpenTelemetry is there; its name, never its
    arguments. The decide and outcome requests then carry its trace context to the proxy."""
    try:
        from opentelemetry import trace
    except Exception:
        return contextlib.nullcontext()
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    return trace.get_tracer("svc_chatui").start_as_current_span(f"execute_tool {name}", attributes=attributes)


async def run(
    name: str,
    args: dict | None,
    fn: Callable[[], Any] | Callable[[], Awaitable[Any]],
    *,
    __user__: dict | None = None,
    __event_emitter__: Callable[[dict], Awaitable[Any]] | None = None,
    __metadata__: dict | None = None,
    payload: str | None = None,
) -> Any:
    """Decide, audit and (on permit only) run one governed tool call. See the module docstring."""
    with _tool_span(name):
        return await _run(name, args, fn, __user__=__user__, __event_emitter__=__event_emitter__, __metadata__=__metadata__, payload=payload)


async def _run(
    name: str,
    args: dict | None,
    fn: Callable[[], Any] | Callable[[], Awaitable[Any]],
    *,
    __user__: dict | None = None,
    __event_emitter__: Callable[[dict], Awaitable[Any]] | None = None,
    __metadata__: dict | None = None,
    payload: str | None = None,
) -> Any:
    request: dict[str, Any] = {"tool": name, "user": _frontend_user(__user__), "args": dict(args or {})}
    if payload is not None:
        request["payload"] = payload
    meta = __metadata__ if isinstance(__metadata__, dict) else {}
    for key in ("chat_id", "message_id"):
        if isinstance(meta.get(key), str) and meta[key]:
            request[key] = meta[key]
    try:
        status, decision = await _local.post_json("/v1/tools/decide", request)
    except _local.ProxyUnavailable as e:
        log.warning("svc governor: %s refused, proxy unavailable: %s", name, e)
        return failed(refusal_text(UNAVAILABLE, name))
    if not isinstance(decision, dict) or decision.get("decision") not in ("permit", "deny"):
        log.warning("svc governor: %s refused, the proxy answered HTTP %s without a decision", name, status)
        return failed(refusal_text(UNAVAILABLE, name, f"the svc proxy answered HTTP {status} without a decision"))

    if decision["decision"] == "deny":
        code = str(decision.get("code") or DENIED)
        if code == UNLINKED:
            sent = await _notify_claim_link(__event_emitter__, str(decision.get("claim_url") or ""))
            return failed(unlinked_text(sent))
        return failed(refusal_text(code, name, decision.get("message") if isinstance(decision.get("message"), str) else None))

    record_id = str(decision.get("record_id") or "")
    try:
        result = await _call(fn)
    except ToolError as e:
        await _report(record_id, "error", e.exit_code)
        return f"Error: {e}"
    except BaseException:
        await _report(record_id, "error", 1)
        raise
    await _report(record_id, "ok", 0)
    return result
