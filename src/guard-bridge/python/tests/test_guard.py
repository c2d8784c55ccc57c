"""The svc_guard filter: fail closed while the proxy is not ready; only governed tools remain."""

from __future__ import annotations

import asyncio

import pytest

from svc_chatui.guard import Filter, GovernanceUnavailable


def inlet(body, **kw):
    return asyncio.run(Filter().inlet(body, **kw))


def test_proxy_not_ready_refuses_the_turn(proxy):
    proxy.routes["GET /readyz"] = lambda h, b: (503, {"reason": "bootstrap pending"})
    with pytest.raises(GovernanceUnavailable, match="Governance unavailable.*bootstrap pending"):
        inlet({"model": "svc.gpt", "messages": []})


def test_proxy_absent_refuses_the_turn(no_proxy):
    with pytest.raises(GovernanceUnavailable, match="Governance unavailable"):
        inlet({"model": "svc.gpt", "messages": []})


def test_ungoverned_tool_ids_are_removed(proxy, acme):
    body = {
        "model": "svc.gpt",
        "tool_ids": ["acme_crm", "my_own_tool", "server:mcp:github", "acme_tickets", "server:openapi"],
        "tool_servers": [{"url": "http://evil"}],
        "metadata": {"tool_ids": ["my_own_tool", "acme_crm"], "tool_servers": [{}]},
    }
    out = inlet(body)
    assert out["tool_ids"] == ["acme_crm", "acme_tickets"]
    assert "tool_servers" not in out
    assert out["metadata"]["tool_ids"] == ["acme_crm"]
    assert "tool_servers" not in out["metadata"]


def test_no_packs_means_no_tools(proxy, monkeypatch):
    from svc_chatui import manifest

    monkeypatch.delenv("SVC_CHATUI_TOOL_PACKS", raising=False)
    manifest._governed_cache.clear()
    assert inlet({"model": "svc.gpt", "tool_ids": ["acme_crm"]})["tool_ids"] == []


def test_models_not_served_by_the_pipe_are_refused(proxy, acme):
    with pytest.raises(GovernanceUnavailable, match="not served through svc"):
        inlet({"model": "gpt-4o", "messages": []})
    # A workspace model built on a svc model is fine.
    out = inlet({"model": "my-helper", "messages": []}, __model__={"id": "my-helper", "info": {"base_model_id": "svc.gpt"}})
    assert out["model"] == "my-helper"
