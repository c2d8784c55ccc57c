"""The Pipe: model list from the proxy, streaming relayed as it arrives, refusals as errors."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from svc_chatui import governor
from svc_chatui.pipe import GovernanceUnavailable, Pipe

# What a user of a disabled service user reads (the proxy's text, docs/proxy.md "The governed call").
DISABLED_TEXT = "Refused (identity.disabled): the service user this chat account is linked to is disabled; ask an administrator of svc to enable it"

USER = {"id": "u-1", "email": "ada@example.com", "name": "Ada Lövelace", "role": "user"}


def test_models_from_the_proxy(proxy):
    proxy.routes["GET /v1/models"] = lambda h, b: (200, {"object": "list", "data": [{"id": "gpt-4o", "object": "model"}, {"id": "mini", "name": "Mini"}]})
    assert asyncio.run(Pipe().pipes()) == [{"id": "gpt-4o", "name": "gpt-4o"}, {"id": "mini", "name": "Mini"}]
    assert proxy.of("GET /v1/models")[0]["headers"]["authorization"] == "Bearer svc_rt_test"


def test_the_front_ends_credential_of_this_boot_is_sent_not_the_runtime_token(proxy, monkeypatch):
    # under svc run the front end holds SVC_FRONTEND_TOKEN only (docs/frontend-boundary.md)
    proxy.routes["GET /v1/models"] = lambda h, b: (200, {"object": "list", "data": []})
    monkeypatch.setenv("SVC_FRONTEND_TOKEN", "svc_fe_boot")
    asyncio.run(Pipe().pipes())
    monkeypatch.delenv("SVC_RUNTIME_TOKEN")
    asyncio.run(Pipe().pipes())
    assert [r["headers"]["authorization"] for r in proxy.of("GET /v1/models")] == ["Bearer svc_fe_boot", "Bearer svc_fe_boot"]


def test_model_list_is_empty_while_the_proxy_is_not_ready(proxy, no_proxy):
    assert asyncio.run(Pipe().pipes()) == []


def test_model_list_is_empty_on_503(proxy):
    proxy.routes["GET /v1/models"] = lambda h, b: (503, {"reason": "starting"})
    assert asyncio.run(Pipe().pipes()) == []


def stream_route(proxy, gate: threading.Event, events: list):
    def handler(h, body):
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("transfer-encoding", "chunked")
        h.end_headers()

        def chunk(text):
            data = text.encode()
            h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            h.wfile.flush()

        chunk(": keep-alive\n\n")
        chunk(f"data: {json.dumps(events[0])}\n\n")
        gate.wait(10)  # the rest only once the test has seen the first event
        # one event split across two chunks
        second = f"data: {json.dumps(events[1])}\n\n"
        chunk(second[:10])
        chunk(second[10:])
        chunk("data: [DONE]\n\n")
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()
        return None

    proxy.routes["POST /v1/chat/completions"] = handler


def test_stream_is_relayed_as_it_comes_with_tool_calls(proxy, acme):
    gate = threading.Event()
    first = {"choices": [{"delta": {"content": "Let me look"}}]}
    tool_call = {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup_customer", "arguments": "{\"customer_id\":\"c-1\"}"}}]}}]}
    stream_route(proxy, gate, [first, tool_call])
    body = {
        "model": "svc.gpt-4o",
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {"type": "function", "function": {"name": "lookup_customer", "parameters": {}}},
            {"type": "function", "function": {"name": "search_web", "parameters": {}}},
        ],
    }

    async def consume():
        gen = await Pipe().pipe(body, __user__=USER)
        got = [await gen.__anext__()]
        assert not gate.is_set()  # the first event arrived before the proxy sent the rest
        gate.set()
        got += [line async for line in gen]
        return got

    lines = asyncio.run(consume())
    assert lines == [f"data: {json.dumps(first)}", f"data: {json.dumps(tool_call)}"]
    [req] = proxy.of("POST /v1/chat/completions")
    assert req["body"]["model"] == "gpt-4o"
    assert [t["function"]["name"] for t in req["body"]["tools"]] == ["lookup_customer"]
    assert req["headers"]["x-svc-user-id"] == "u-1"
    assert req["headers"]["x-svc-user-email"] == "ada@example.com"
    assert req["headers"]["x-svc-user-name"] == "Ada%20L%C3%B6velace"
    assert req["headers"]["authorization"] == "Bearer svc_rt_test"


def sse_route(proxy, events: list):
    """The proxy answers a stream of these events (dicts become data lines) at once."""

    def handler(h, body):
        data = "".join(f"data: {json.dumps(e) if isinstance(e, dict) else e}\n\n" for e in events).encode()
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
        return None

    proxy.routes["POST /v1/chat/completions"] = handler


def call_chunk(index, name=None, arguments=None, call_id=None):
    fn = {k: v for k, v in (("name", name), ("arguments", arguments)) if v is not None}
    call = {"index": index, **({"id": call_id, "type": "function"} if call_id else {}), "function": fn}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


OFFERED = [
    {"type": "function", "function": {"name": "lookup_customer", "parameters": {}}},
    {"type": "function", "function": {"name": "search_chats", "parameters": {}}},  # Open WebUI built-in
]


def relay(body):
    async def consume():
        gen = await Pipe().pipe(body, __user__=USER)
        return [line async for line in gen]

    return [json.loads(line[5:]) for line in asyncio.run(consume())]


def test_streamed_calls_of_ungoverned_tools_are_dropped(proxy, acme):
    """The model (or an injected prompt) calls Open WebUI's built-in search_chats, which was
    never offered to it: the front end would run it, so the Pipe drops every fragment of it."""
    sse_route(proxy, [
        {"choices": [{"index": 0, "delta": {"content": "Checking"}}]},
        call_chunk(0, "lookup_customer", "", "call_1"),
        call_chunk(1, "search_chats", "", "call_2"),
        call_chunk(0, arguments='{"customer_id":'),
        call_chunk(1, arguments='{"query":"passwords"}'),
        call_chunk(0, arguments='"c-1"}'),
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ""}}, {"index": 1, "function": {"arguments": ""}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        "[DONE]",
    ])
    events = relay({"model": "svc.gpt-4o", "stream": True, "messages": [{"role": "user", "content": "hi"}], "tools": OFFERED})
    calls = [c for e in events for c in e["choices"][0]["delta"].get("tool_calls", [])]
    assert {c["index"] for c in calls} == {0}
    assert "".join(c["function"].get("arguments", "") for c in calls) == '{"customer_id":"c-1"}'
    assert [c["function"]["name"] for c in calls if "name" in c["function"]] == ["lookup_customer"]
    assert events[0] == {"choices": [{"index": 0, "delta": {"content": "Checking"}}]}
    assert events[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert "search_chats" not in json.dumps(events) and "passwords" not in json.dumps(events)
    # it was never offered to the model either
    assert [t["function"]["name"] for t in proxy.of("POST /v1/chat/completions")[0]["body"]["tools"]] == ["lookup_customer"]


def test_a_call_renamed_by_a_later_fragment_loses_the_rename(proxy, acme):
    sse_route(proxy, [call_chunk(0, "lookup_customer", "", "call_1"), call_chunk(0, "search_chats", '{"query":"x"}'), call_chunk(0, arguments="{}")])
    events = relay({"model": "svc.m", "stream": True, "messages": [], "tools": OFFERED})
    names = [c["function"].get("name") for e in events for c in e["choices"][0]["delta"].get("tool_calls", [])]
    assert names == ["lookup_customer"]


def test_calls_are_dropped_when_no_governed_tool_was_offered(proxy, monkeypatch):
    from svc_chatui import manifest

    monkeypatch.delenv("SVC_CHATUI_TOOL_PACKS", raising=False)
    manifest._governed_cache.clear()
    sse_route(proxy, [call_chunk(0, "lookup_customer", '{"customer_id":"c-1"}', "call_1"), {"choices": [{"index": 0, "delta": {"content": "done"}}]}])
    events = relay({"model": "svc.m", "stream": True, "messages": [], "tools": OFFERED})
    assert all("tool_calls" not in e["choices"][0]["delta"] for e in events)
    assert events[-1]["choices"][0]["delta"] == {"content": "done"}


def test_a_completion_keeps_only_calls_of_offered_tools(proxy, acme):
    completion = {
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "search_chats", "arguments": "{}"}},
            {"id": "call_2", "type": "function", "function": {"name": "lookup_customer", "arguments": '{"customer_id":"c-1"}'}},
        ]}}]
    }
    proxy.routes["POST /v1/chat/completions"] = lambda h, b: (200, completion)
    out = asyncio.run(Pipe().pipe({"model": "svc.m", "messages": [], "tools": OFFERED}, __user__=USER))
    assert [c["function"]["name"] for c in out["choices"][0]["message"]["tool_calls"]] == ["lookup_customer"]


def test_only_ungoverned_tools_means_no_tools_sent(proxy, monkeypatch):
    from svc_chatui import manifest

    monkeypatch.delenv("SVC_CHATUI_TOOL_PACKS", raising=False)
    manifest._governed_cache.clear()
    proxy.routes["POST /v1/chat/completions"] = lambda h, b: (200, {"choices": [{"message": {"content": "ok"}}]})
    out = asyncio.run(Pipe().pipe({"model": "svc.m", "messages": [], "tools": [{"type": "function", "function": {"name": "x"}}], "tool_choice": "auto"}))
    assert out == {"choices": [{"message": {"content": "ok"}}]}
    sent = proxy.of("POST /v1/chat/completions")[0]["body"]
    assert "tools" not in sent and "tool_choice" not in sent


def test_refusal_is_raised_as_the_assistant_error(proxy):
    proxy.routes["POST /v1/chat/completions"] = lambda h, b: (403, {"code": "svc.denied", "message": "Refused (svc.denied): no model:invoke permit"})
    with pytest.raises(Exception, match=r"Refused \(svc.denied\): no model:invoke permit"):
        asyncio.run(Pipe().pipe({"model": "svc.m", "stream": True, "messages": []}, __user__=USER))


def test_unreachable_proxy_is_governance_unavailable(no_proxy):
    with pytest.raises(GovernanceUnavailable, match="request was not sent"):
        asyncio.run(Pipe().pipe({"model": "svc.m", "stream": True, "messages": []}, __user__=USER))


def test_unlinked_model_call_sends_the_claim_link_only_as_a_notification(proxy):
    link = "https://svc.example.com/claim/clm_PIPE42"
    proxy.routes["POST /v1/chat/completions"] = lambda h, b: (
        403,
        {"error": {"message": f"Refused (identity.unlinked) {link}", "type": "refusal", "code": "identity.unlinked", "claim_url": link}},
    )
    events = []

    async def emitter(e):
        events.append(e)

    with pytest.raises(Exception) as err:
        asyncio.run(Pipe().pipe({"model": "svc.m", "stream": True, "messages": []}, __user__=USER, __event_emitter__=emitter))
    # the spec's text first, then that a link was sent; the link only in the dialog
    assert str(err.value) == governor.unlinked_text(True)
    assert str(err.value).startswith("Refused (identity.unlinked): ") and link not in str(err.value)
    assert events == [governor.claim_notification(link)]


def test_unlinked_model_call_without_a_link_says_exactly_the_spec_text(proxy):
    proxy.routes["POST /v1/chat/completions"] = lambda h, b: (403, {"error": {"message": "Refused (identity.unlinked)", "type": "refusal", "code": "identity.unlinked"}})

    async def emitter(e):
        raise AssertionError("nothing to send")

    with pytest.raises(Exception) as err:
        asyncio.run(Pipe().pipe({"model": "svc.m", "messages": []}, __user__=USER, __event_emitter__=emitter))
    assert str(err.value) == "Refused (identity.unlinked)"


@pytest.mark.parametrize("message", [DISABLED_TEXT, ""])
def test_a_disabled_users_model_call_says_disabled_and_sends_no_link(proxy, message):
    link = "https://svc.example.com/claim/clm_NEVER"
    proxy.routes["POST /v1/chat/completions"] = lambda h, b: (403, {"error": {"message": message, "type": "refusal", "code": "identity.disabled", "claim_url": link}})
    events = []

    async def emitter(e):
        events.append(e)

    with pytest.raises(Exception) as err:
        asyncio.run(Pipe().pipe({"model": "svc.m", "messages": []}, __user__=USER, __event_emitter__=emitter))
    assert str(err.value) == DISABLED_TEXT
    assert events == []


def test_plain_ascii_user_headers_are_sent_as_is(proxy):
    proxy.routes["POST /v1/chat/completions"] = lambda h, b: (200, {"choices": []})
    asyncio.run(Pipe().pipe({"model": "svc.m", "messages": []}, __user__={"id": "u-2", "email": "bob@example.com", "name": "Bob Smith"}))
    h = proxy.of("POST /v1/chat/completions")[0]["headers"]
    assert (h["x-svc-user-id"], h["x-svc-user-email"], h["x-svc-user-name"]) == ("u-2", "bob@example.com", "Bob Smith")


def test_a_background_task_is_named_to_the_proxy_and_a_users_turn_is_not(proxy):
    proxy.routes["POST /v1/chat/completions"] = lambda h, b: (200, {"choices": []})
    asyncio.run(Pipe().pipe({"model": "svc.m", "messages": []}, __user__=USER, __metadata__={"task": "title_generation", "chat_id": "c-1"}))
    asyncio.run(Pipe().pipe({"model": "svc.m", "messages": []}, __user__=USER, __metadata__={"chat_id": "c-1"}))
    asyncio.run(Pipe().pipe({"model": "svc.m", "messages": []}, __user__=USER, __metadata__={"task": "Title Generation\r\nx-evil: 1"}))
    sent = [r["headers"] for r in proxy.of("POST /v1/chat/completions")]
    assert sent[0]["x-svc-task"] == "title_generation"
    assert "x-svc-task" not in sent[1]
    assert "x-svc-task" not in sent[2] and "x-evil" not in sent[2]


def test_a_budget_refusal_is_a_normal_assistant_message(proxy):
    text = 'Refused (svc.budget_exceeded): the budget "alice daily" is used up (100 tokens of 100 tokens this day); it resets at 2026-05-11T00:00:00.000Z'
    proxy.routes["POST /v1/chat/completions"] = lambda h, b: (403, {"error": {"message": text, "type": "refusal", "code": "svc.budget_exceeded"}})
    assert asyncio.run(Pipe().pipe({"model": "svc.m", "stream": True, "messages": []}, __user__=USER)) == text
    proxy.routes["POST /v1/chat/completions"] = lambda h, b: (403, {"error": {"message": "Refused (svc.rate_limited): x", "type": "refusal", "code": "svc.rate_limited"}})
    assert asyncio.run(Pipe().pipe({"model": "svc.m", "messages": []}, __user__=USER)) == "Refused (svc.rate_limited): x"


def test_a_notice_from_the_proxy_becomes_a_notification_to_that_user(proxy):
    def answer(h, body):
        data = json.dumps({"choices": [{"message": {"content": "ok"}}]}).encode()
        h.send_response(200)
        h.send_header("content-type", "application/json")
        h.send_header("x-svc-notice", "81%20%25%20of%20the%20budget%20%22alice%22%20is%20used")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
        return None

    proxy.routes["POST /v1/chat/completions"] = answer
    events = []

    async def emitter(e):
        events.append(e)

    out = asyncio.run(Pipe().pipe({"model": "svc.m", "messages": []}, __user__=USER, __event_emitter__=emitter))
    assert out == {"choices": [{"message": {"content": "ok"}}]}
    assert events == [{"type": "notification", "data": {"type": "warning", "content": '81 % of the budget "alice" is used'}}]
