"""svc's MCP gateway in the front end (issue 13): the seed's connection, the guard and the Pipe
let svc's own MCP tools through and nothing else."""

from __future__ import annotations

import asyncio

from svc_chatui.guard import MCP_TOOL_ID, Filter
from svc_chatui.pipe import governed_tools
from svc_chatui.seed import mcp_connection, with_svc_connection

URL = "http://127.0.0.1:7391/mcp"


def test_the_guard_keeps_the_gateway_and_drops_a_hand_added_mcp_connection(proxy, acme, monkeypatch):
    monkeypatch.setenv("SVC_MCP_GATEWAY_URL", URL)
    body = {"model": "svc.gpt", "tool_ids": ["acme_crm", MCP_TOOL_ID, "server:mcp:github", "server:mcp:svc2"]}
    out = asyncio.run(Filter().inlet(body))
    assert out["tool_ids"] == ["acme_crm", MCP_TOOL_ID]


def test_without_the_gateway_no_tool_server_is_kept(proxy, acme, monkeypatch):
    monkeypatch.delenv("SVC_MCP_GATEWAY_URL", raising=False)
    out = asyncio.run(Filter().inlet({"model": "svc.gpt", "tool_ids": [MCP_TOOL_ID, "acme_crm"]}))
    assert out["tool_ids"] == ["acme_crm"]


def test_the_pipe_offers_the_gateways_tools_and_no_other_unknown_name(monkeypatch):
    spec = lambda n: {"type": "function", "function": {"name": n}}  # noqa: E731
    tools = [spec("svc_notes.lookup"), spec("github_create_issue"), spec("search_chats"), spec("svcx_notes.lookup"), spec("svc_notes")]
    monkeypatch.setenv("SVC_MCP_GATEWAY_URL", URL)
    assert [t["function"]["name"] for t in governed_tools(tools, frozenset())] == ["svc_notes.lookup"]
    monkeypatch.delenv("SVC_MCP_GATEWAY_URL")
    assert governed_tools(tools, frozenset()) == []


def test_the_pipe_offers_mcp_tools_of_any_mapped_name(monkeypatch):
    """Issue 31: MCP tool names keep `-` (server-everything's get-sum) or are escaped with `--`."""
    spec = lambda n: {"type": "function", "function": {"name": n}}  # noqa: E731
    names = ["svc_everything.get-sum", "svc_everything.trigger-long-running-operation", "svc_fs.files--2eread", "svc_odd.__proto__", "svc_x.1st"]
    bad = ["svc_everything.get sum", "svc_everything.get-sum\n", "svc_everything.", "svc_-x.y", "svc_a.b.c"]
    monkeypatch.setenv("SVC_MCP_GATEWAY_URL", URL)
    assert [t["function"]["name"] for t in governed_tools([spec(n) for n in names + bad], frozenset())] == names


def test_the_seed_writes_svcs_connection_and_leaves_an_admins_own_for_drift():
    admins = {"type": "mcp", "url": "https://mcp.example.com", "auth_type": "bearer", "config": {"enable": True}, "info": {"id": "github"}}
    stale = {**mcp_connection("http://127.0.0.1:1/mcp")}
    out = with_svc_connection([stale, admins], URL)
    assert out == [mcp_connection(URL), admins]
    ours = out[0]
    assert ours["type"] == "mcp" and ours["auth_type"] == "session" and ours["config"]["enable"] is True
    assert ours["config"]["access_grants"] == [{"principal_type": "user", "principal_id": "*", "permission": "read"}]
    assert with_svc_connection(None, URL) == [mcp_connection(URL)]
