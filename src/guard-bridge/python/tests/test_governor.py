"""The governor: decide, run only on permit, report the outcome, refusal texts, claim links."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from svc_chatui import claim_dialog, governor

# What a user of a disabled service user reads (the proxy's text, docs/proxy.md "The governed call").
DISABLED_TEXT = "Refused (identity.disabled): the service user this chat account is linked to is disabled; ask an administrator of svc to enable it"

USER = {"id": "5b0c-user", "email": "ada@example.com", "name": "Ada", "role": "user", "valves": None}
CLAIM = "https://svc.example.com/claim/clm_SECRET123"


class Body:
    def __init__(self, result="done", exc=None):
        self.calls = 0
        self.result = result
        self.exc = exc

    def __call__(self):
        self.calls += 1
        if self.exc:
            raise self.exc
        return self.result


def permit(proxy):
    proxy.routes["POST /v1/tools/decide"] = lambda h, b: (200, {"decision": "permit", "record_id": "rec_1"})
    proxy.routes["POST /v1/tools/outcome"] = lambda h, b: (204, {})


def deny(proxy, code, message, **extra):
    proxy.routes["POST /v1/tools/decide"] = lambda h, b: (200, {"decision": "deny", "record_id": "rec_2", "code": code, "message": message, **extra})
    proxy.routes["POST /v1/tools/outcome"] = lambda h, b: (204, {})


def run(*args, **kw):
    return asyncio.run(governor.run(*args, **kw))


def test_permit_runs_the_body_and_reports_ok(proxy):
    permit(proxy)
    body = Body("3 customers")
    out = run("crm.lookup_customer", {"q": "ada"}, body, __user__=USER, __metadata__={"chat_id": "chat-1", "message_id": "msg-1"})
    assert out == "3 customers" and body.calls == 1
    [decide] = proxy.of("POST /v1/tools/decide")
    assert decide["headers"]["authorization"] == "Bearer svc_rt_test"
    assert decide["body"] == {
        "tool": "crm.lookup_customer",
        "user": {"id": "5b0c-user", "email": "ada@example.com", "name": "Ada", "role": "user"},
        "args": {"q": "ada"},
        "chat_id": "chat-1",
        "message_id": "msg-1",
    }
    assert [r["body"] for r in proxy.of("POST /v1/tools/outcome")] == [{"record_id": "rec_1", "outcome": "ok", "exit_code": 0}]


def test_async_body_and_payload(proxy):
    permit(proxy)

    async def body():
        return "async ok"

    assert run("code.exec", {}, body, __user__=USER, payload="print(1)") == "async ok"
    assert proxy.of("POST /v1/tools/decide")[0]["body"]["payload"] == "print(1)"


def test_tool_error_is_reported_with_its_exit_code(proxy):
    permit(proxy)
    out = run("crm.update", {}, Body(exc=governor.ToolError("no customer c-9", exit_code=2)), __user__=USER)
    assert out == "Error: no customer c-9"
    assert proxy.of("POST /v1/tools/outcome")[0]["body"] == {"record_id": "rec_1", "outcome": "error", "exit_code": 2}


def test_exception_is_reported_and_reraised(proxy):
    permit(proxy)
    with pytest.raises(ValueError):
        run("crm.update", {}, Body(exc=ValueError("boom")), __user__=USER)
    assert proxy.of("POST /v1/tools/outcome")[0]["body"]["outcome"] == "error"


@pytest.mark.parametrize(
    "code,message,prefix",
    [
        ("tool_not_registered", "tool_not_registered: crm.update is not in the bundle", "tool_not_registered"),
        ("svc.denied", "Refused (svc.denied): no permit for user:usr_1 on tool:crm.update", "Refused (svc.denied): no permit"),
        ("svc.denied", "", "Refused (svc.denied): no policy permits tool:crm.update"),
        ("identity.unlinked", "Refused (identity.unlinked): this chat user is not linked to a service user", "Refused (identity.unlinked)"),
        ("identity.disabled", DISABLED_TEXT, DISABLED_TEXT),
    ],
)
def test_refusals_never_run_the_body(proxy, code, message, prefix):
    deny(proxy, code, message)
    body = Body()
    out = run("crm.update", {"id": 1}, body, __user__=USER)
    # a failed call for Open WebUI (an "error" field), the refusal text unchanged inside
    assert list(out) == ["error"] and out["error"].startswith(prefix)
    assert body.calls == 0
    assert proxy.of("POST /v1/tools/outcome") == []


def test_unlinked_user_gets_the_claim_link_only_as_a_notification(proxy, caplog):
    # The proxy's real refusal (src/proxy/policy/policy-index.ts) carries a detail; the model sees
    # exactly the spec's text (§7).
    deny(proxy, "identity.unlinked", "Refused (identity.unlinked): this chat user is not linked to a service user; open the sign-in link sent to you, then ask again", claim_url=CLAIM)
    events = []

    async def emitter(event):
        events.append(event)

    caplog.set_level(logging.DEBUG)
    body = Body()
    out = run("crm.update", {}, body, __user__=USER, __event_emitter__=emitter)
    assert body.calls == 0
    # the spec's text first, then that a link was sent (never the link)
    assert out == {"error": governor.UNLINKED_TEXT + governor.LINK_SENT}
    assert out["error"].startswith("Refused (identity.unlinked): a one-time link")
    assert "clm_SECRET123" not in str(out)
    assert events == [governor.claim_notification(CLAIM)]
    # a dialog drawn by Open WebUI's execute event: the link its primary action opens in a new tab
    assert events[0]["type"] == "execute" and events[0]["data"]["title"] == "Link your chat account"
    assert events[0]["data"]["url"] == CLAIM
    assert json.dumps(CLAIM) in events[0]["data"]["code"]
    assert 'open.target = "_blank"' in events[0]["data"]["code"]
    assert "clm_SECRET123" not in caplog.text


def test_the_claim_dialog_takes_its_text_as_data_never_as_markup_or_script():
    """The link and texts reach the page JSON-encoded and are set with textContent/href only: a
    link holding quotes, markup or a script end cannot break out; a link that is not http(s)
    (javascript:, data:) is no claim link and is refused."""
    odd = 'https://svc.example.com/claim/a"b</script><img src=x onerror=alert(1)>'
    code = claim_dialog.claim_dialog_event(odd)["data"]["code"]
    assert "</" not in code  # no script end, even were the code ever put in a page
    assert "innerHTML" not in code and "insertAdjacentHTML" not in code
    assert json.loads(code.split("const d = ", 1)[1].split(";\n", 1)[0].replace("<\\/", "</"))["url"] == odd
    for bad in ("javascript:alert(1)", "data:text/html,x", "/claim/relative", ""):
        with pytest.raises(ValueError):
            claim_dialog.claim_dialog_event(bad)


def test_the_claim_link_goes_to_the_unlinked_user_alone(proxy):
    """Two users' calls at once: only the unlinked user's own emitter (Open WebUI binds it to the
    room user:<their id>) gets the link; the linked user's gets nothing."""
    bob = {"id": "bob-id", "email": "bob@example.com", "role": "user"}

    def decide(h, b):
        if b["user"]["id"] == "bob-id":
            return (200, {"decision": "deny", "record_id": "rec_b", "code": "identity.unlinked", "message": "Refused (identity.unlinked)", "claim_url": CLAIM})
        return (200, {"decision": "permit", "record_id": "rec_a"})

    proxy.routes["POST /v1/tools/decide"] = decide
    proxy.routes["POST /v1/tools/outcome"] = lambda h, b: (204, {})
    seen: dict[str, list] = {"alice": [], "bob": []}

    def emitter_of(who):
        async def emit(event):
            seen[who].append(event)

        return emit

    async def both():
        return await asyncio.gather(
            governor.run("crm.lookup_customer", {}, Body("ok"), __user__=USER, __event_emitter__=emitter_of("alice")),
            governor.run("crm.lookup_customer", {}, Body("ok"), __user__=bob, __event_emitter__=emitter_of("bob")),
        )

    alice_out, bob_out = asyncio.run(both())
    assert (alice_out, bob_out) == ("ok", {"error": governor.unlinked_text(True)})
    assert seen["alice"] == []
    assert seen["bob"] == [governor.claim_notification(CLAIM)]


def test_unlinked_without_an_emitter_still_keeps_the_link_out(proxy, caplog):
    deny(proxy, "identity.unlinked", "Refused (identity.unlinked)", claim_url=CLAIM)
    caplog.set_level(logging.DEBUG)
    out = run("crm.update", {}, Body(), __user__=USER)
    # no link reached the user, so the refusal says none was sent: exactly the spec's text
    assert out == {"error": "Refused (identity.unlinked)"}
    assert "did not pass __event_emitter__" in caplog.text
    assert "clm_SECRET123" not in caplog.text


def test_urls_in_refusal_messages_are_withheld(proxy):
    deny(proxy, "svc.denied", f"denied, see {CLAIM}")
    assert "clm_SECRET123" not in run("crm.update", {}, Body(), __user__=USER)["error"]


def test_proxy_unreachable_fails_closed(no_proxy):
    body = Body()
    out = run("crm.update", {}, body, __user__=USER)
    assert out["error"].startswith("Refused (governance.unavailable)")
    assert body.calls == 0


def test_garbage_decision_fails_closed(proxy):
    proxy.routes["POST /v1/tools/decide"] = lambda h, b: (500, {"detail": "internal"})
    body = Body()
    assert run("crm.update", {}, body, __user__=USER)["error"].startswith("Refused (governance.unavailable)")
    assert body.calls == 0


def test_call_without_session_user_sends_null_user(proxy):
    permit(proxy)
    run("crm.lookup_customer", {}, Body(), __user__=None)
    assert proxy.of("POST /v1/tools/decide")[0]["body"]["user"] is None


def test_example_pack_method_goes_through_the_governor(proxy):
    from acme_tools.crm import Tools

    deny(proxy, "svc.denied", "Refused (svc.denied): nope")
    out = asyncio.run(Tools().update_customer("c-1", "new@example.com", __user__=USER))
    assert out["error"].startswith("Refused (svc.denied)")
    assert proxy.of("POST /v1/tools/decide")[0]["body"]["tool"] == "crm.update"
    from acme_tools import crm

    assert crm._CUSTOMERS["c-1"]["email"] == "ada@example.com"


def _open_webui_failed(result) -> bool | None:
    """Open WebUI's own rule for a failed tool call (utils.middleware._is_tool_result_error, fed
    with tool_result_content of the result), when Open WebUI is importable here."""
    try:
        from open_webui.utils import middleware  # type: ignore
    except Exception:
        return None
    return middleware._is_tool_result_error(middleware.tool_result_content(result))


def test_refusals_have_the_shape_open_webui_shows_as_a_failed_call(proxy):
    deny(proxy, "svc.denied", "Refused (svc.denied): nope")
    out = run("crm.update", {}, Body(), __user__=USER)
    # Open WebUI 0.12's rule (middleware._is_tool_result_error and ToolCallDisplay.svelte): a
    # JSON object whose "error" is a non-empty string is a failed call; a plain "Refused …"
    # text is a success (a green check).
    assert isinstance(out, dict) and isinstance(out["error"], str) and out["error"].strip()
    failed = _open_webui_failed(out)
    if failed is not None:
        assert failed is True
        assert _open_webui_failed("Refused (svc.denied): nope") is False
    permit(proxy)
    ok = run("crm.lookup_customer", {}, Body("3 customers"), __user__=USER)
    assert ok == "3 customers"
    if failed is not None:
        assert _open_webui_failed(ok) is False


@pytest.mark.parametrize("message", [DISABLED_TEXT, "", "no text of the expected form"])
def test_a_disabled_user_is_told_they_are_disabled_not_unlinked(proxy, message):
    """A user of a disabled service user: the refusal says disabled, whatever text the proxy
    sent; no claim link is sent to them (it could not help) and the tool never runs."""
    deny(proxy, "identity.disabled", message, claim_url=CLAIM)
    events = []

    async def emitter(e):
        events.append(e)

    body = Body()
    out = run("crm.update", {"id": 1}, body, __user__=USER, __event_emitter__=emitter)
    assert out == {"error": DISABLED_TEXT}
    assert "unlinked" not in out["error"] and "link" not in out["error"].replace("linked to", "")
    assert events == [] and body.calls == 0
