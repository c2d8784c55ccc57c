"""Shared fixtures: the package and the example packs on sys.path, and a fake proxy daemon
serving the local API on a unix socket (standard library only)."""

from __future__ import annotations

import json
import os
import socketserver
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(REPO / "examples"))


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class FakeProxy:
    """Routes map "METHOD /path" to fn(handler, body) → (status, dict | None) or None when the
    handler wrote the response itself. Every request is recorded with headers and JSON body."""

    def __init__(self, path: str):
        self.path = path
        self.routes: dict = {}
        self.requests: list[dict] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _handle(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                body = json.loads(raw) if raw else None
                key = f"{self.command} {self.path}"
                proxy.requests.append({"route": key, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                fn = proxy.routes.get(key)
                if fn is None:
                    return self.reply(404, {"detail": f"no route {key}"})
                out = fn(self, body)
                if out is not None:
                    self.reply(*out)

            def reply(self, status, doc):
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(data)

            do_GET = _handle
            do_POST = _handle

        self.server = _Server(path, Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def of(self, route: str) -> list[dict]:
        return [r for r in self.requests if r["route"] == route]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sock_dir():
    # Unix socket paths are limited to ~108 bytes: pytest's tmp_path can be too long.
    d = tempfile.mkdtemp(prefix="svcpy-")
    yield d
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)


@pytest.fixture
def proxy(sock_dir, monkeypatch):
    path = os.path.join(sock_dir, "proxy.sock")
    fake = FakeProxy(path)
    fake.routes["GET /readyz"] = lambda h, b: (200, {"state": "ready"})
    monkeypatch.setenv("SVC_RUNTIME_SOCKET_PATH", path)
    monkeypatch.setenv("SVC_RUNTIME_TOKEN", "svc_rt_test")
    yield fake
    fake.close()


@pytest.fixture
def no_proxy(sock_dir, monkeypatch):
    monkeypatch.setenv("SVC_RUNTIME_SOCKET_PATH", os.path.join(sock_dir, "absent.sock"))
    monkeypatch.setenv("SVC_RUNTIME_TOKEN", "svc_rt_test")


@pytest.fixture
def acme(monkeypatch):
    from svc_chatui import manifest

    monkeypatch.setenv("SVC_CHATUI_TOOL_PACKS", "acme_tools")
    manifest._governed_cache.clear()
    yield
    manifest._governed_cache.clear()
