"""Keep-alive in svc_chatui._local: connections are reused only after a complete answer, a
reused connection the proxy closed meanwhile is replaced once, and every other failure still
fails closed (ProxyUnavailable, a refusal, the tool body never runs)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading

import pytest

from svc_chatui import _local, governor


class RawProxy:
    """A unix-socket HTTP/1.1 server that keeps connections alive unless told otherwise.
    `behave(conn_no, req_no_on_conn, method, path)` returns the bytes to send, or None to close
    the connection without answering."""

    def __init__(self, path: str, behave):
        self.path = path
        self.behave = behave
        self.connections = 0
        self.requests: list[tuple[int, str, str, dict]] = []
        self.socks: list[socket.socket] = []
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                s, _ = self.srv.accept()
            except OSError:
                return
            self.connections += 1
            self.socks.append(s)
            threading.Thread(target=self._serve, args=(s, self.connections), daemon=True).start()

    def _serve(self, s: socket.socket, conn_no: int):
        f = s.makefile("rb")
        n = 0
        try:
            while True:
                line = f.readline()
                if not line:
                    return
                method, path, _ = line.decode().split(" ", 2)
                headers = {}
                while True:
                    h = f.readline()
                    if h in (b"\r\n", b""):
                        break
                    k, _, v = h.decode().partition(":")
                    headers[k.strip().lower()] = v.strip()
                f.read(int(headers.get("content-length") or 0))
                n += 1
                self.requests.append((conn_no, method, path, headers))
                out = self.behave(conn_no, n, method, path)
                if out is None:
                    return
                if isinstance(out, tuple):  # (bytes, "close"): send, then hang up
                    s.sendall(out[0])
                    return
                s.sendall(out)
                if headers.get("connection", "").lower() == "close":
                    return
        except OSError:
            return
        finally:
            try:
                s.close()
            except OSError:
                pass

    def close(self):
        self.srv.close()
        for s in self.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass


def json_answer(doc: dict, extra: str = "") -> bytes:
    body = json.dumps(doc).encode()
    return f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n{extra}\r\n".encode() + body


def sse_answer() -> bytes:
    chunks = [b'data: {"n":1}\n\n', b'data: {"n":2}\n\n', b"data: [DONE]\n\n"]
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    return b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n" + body


PERMIT = {"decision": "permit", "record_id": "rec_1"}


@pytest.fixture
def raw(sock_dir, monkeypatch):
    servers = []

    def start(behave):
        path = os.path.join(sock_dir, f"raw{len(servers)}.sock")
        srv = RawProxy(path, behave)
        servers.append(srv)
        monkeypatch.setenv("SVC_RUNTIME_SOCKET_PATH", path)
        monkeypatch.setenv("SVC_RUNTIME_TOKEN", "svc_rt_test")
        return srv

    yield start
    for s in servers:
        s.close()


def test_sequential_calls_share_one_connection_without_connection_close(raw):
    srv = raw(lambda c, n, m, p: json_answer(PERMIT))

    async def main():
        a = await _local.post_json("/v1/tools/decide", {"tool": "t"})
        b = await _local.post_json("/v1/tools/decide", {"tool": "t"})
        c = await _local.readiness()
        _local.close_idle_connections()
        return a, b, c

    a, b, c = asyncio.run(main())
    assert a == (200, PERMIT) and b == (200, PERMIT) and c == (True, "ready")
    assert srv.connections == 1
    assert [r[0] for r in srv.requests] == [1, 1, 1]
    assert all("connection" not in r[3] for r in srv.requests)


def test_a_streamed_answer_read_to_its_end_frees_the_connection_for_a_json_call(raw):
    srv = raw(lambda c, n, m, p: sse_answer() if p == "/v1/chat/completions" else json_answer(PERMIT))

    async def main():
        resp = await _local.request("POST", "/v1/chat/completions", body={"stream": True})
        lines = [line async for line in resp.lines()]
        decided = await _local.post_json("/v1/tools/decide", {"tool": "t"})
        _local.close_idle_connections()
        return lines, decided

    lines, decided = asyncio.run(main())
    assert [x for x in lines if x] == ['data: {"n":1}', 'data: {"n":2}', "data: [DONE]"]
    assert decided == (200, PERMIT)
    assert srv.connections == 1


def test_an_abandoned_stream_or_connection_close_is_never_reused(raw):
    srv = raw(lambda c, n, m, p: sse_answer() if p == "/v1/chat/completions" else json_answer(PERMIT, "connection: close\r\n"))

    async def main():
        resp = await _local.request("POST", "/v1/chat/completions", body={"stream": True})
        agen = resp.chunks()
        await agen.__anext__()  # read one chunk, then give up on the stream
        await agen.aclose()
        await _local.post_json("/v1/tools/decide", {"tool": "t"})  # answered with connection: close
        await _local.post_json("/v1/tools/decide", {"tool": "t"})
        _local.close_idle_connections()

    asyncio.run(main())
    assert srv.connections == 3


def test_a_connection_closed_by_the_proxy_meanwhile_is_replaced_once(raw):
    # The first connection answers one request; the next request on it meets a proxy that
    # hangs up without answering (it restarted). The call is sent once more on a fresh
    # connection and answered there; the tool body runs once.
    def behave(c, n, m, p):
        return json_answer(PERMIT) if n == 1 else None

    srv = raw(behave)
    ran = []

    async def main():
        first = await _local.post_json("/v1/tools/decide", {"tool": "t"})
        assert len(_local._idle(srv.path)) == 1
        out = await governor.run("crm.read", {"q": 1}, lambda: ran.append(1) or "ran")
        _local.close_idle_connections()
        return first, out

    first, out = asyncio.run(main())
    assert first == (200, PERMIT)
    assert out == "ran" and ran == [1]
    decides = [r for r in srv.requests if r[2] == "/v1/tools/decide"]
    # conn 1: answered, then one request it hung up on; conn 2: the same request again, answered
    assert [r[0] for r in decides] == [1, 1, 2]


def test_an_idle_connection_the_proxy_closed_is_dropped_before_use(raw):
    srv = raw(lambda c, n, m, p: (json_answer(PERMIT), "close"))

    async def main():
        a = await _local.post_json("/v1/tools/decide", {"tool": "t"})
        await asyncio.sleep(0.05)  # the EOF arrives while the connection is idle
        b = await _local.post_json("/v1/tools/decide", {"tool": "t"})
        _local.close_idle_connections()
        return a, b

    assert asyncio.run(main()) == ((200, PERMIT), (200, PERMIT))
    assert srv.connections == 2 and len(srv.requests) == 2


def test_stale_connection_and_no_proxy_behind_it_fails_closed(raw):
    srv = raw(lambda c, n, m, p: json_answer(PERMIT))
    ran = []

    async def main():
        await _local.post_json("/v1/tools/decide", {"tool": "t"})
        srv.close()
        os.unlink(srv.path)
        await asyncio.sleep(0.05)
        out = await governor.run("crm.read", {}, lambda: ran.append(1))
        _local.close_idle_connections()
        return out

    out = asyncio.run(main())
    assert out["error"].startswith("Refused (governance.unavailable)")
    assert ran == []


def test_a_fresh_connection_closed_without_an_answer_is_not_retried(raw):
    srv = raw(lambda c, n, m, p: None)
    ran = []
    out = asyncio.run(governor.run("crm.read", {}, lambda: ran.append(1)))
    assert out["error"].startswith("Refused (governance.unavailable)")
    assert ran == [] and srv.connections == 1


def test_a_broken_answer_on_a_reused_connection_is_not_retried(raw):
    # Bytes of an answer arrived before the connection broke: the proxy may have decided, so
    # the call is refused rather than sent again.
    srv = raw(lambda c, n, m, p: json_answer(PERMIT) if n == 1 else (b"HTTP/1.1 200 OK\r\ncontent-le", "close"))
    ran = []

    async def main():
        await _local.post_json("/v1/tools/decide", {"tool": "t"})
        out = await governor.run("crm.read", {}, lambda: ran.append(1))
        _local.close_idle_connections()
        return out

    out = asyncio.run(main())
    assert out["error"].startswith("Refused (governance.unavailable)")
    assert ran == []
    assert len([r for r in srv.requests if r[2] == "/v1/tools/decide"]) == 2
