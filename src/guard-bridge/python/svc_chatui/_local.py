"""Client of the proxy daemon's local API on its unix socket (ARCHITECTURE.md "Proxy daemon,
local API"), written on asyncio streams so it never blocks Open WebUI's event loop.

Standard library only. Every route but /readyz carries `Authorization: Bearer
$SVC_FRONTEND_TOKEN`, the credential `svc run` makes for this boot (the front end never gets
the runtime token; docs/frontend-boundary.md), or `$SVC_RUNTIME_TOKEN` when the front end was
started some other way; the socket is `$SVC_RUNTIME_SOCKET_PATH`. Read per call, so a test (or
an operator fixing the environment) never has to re-import the module.

Connections are kept alive: each event loop keeps a few idle connections per socket path and a
call takes one (or opens one). A connection goes back only when its answer was read to the end
by its framing (Content-Length or the last chunk) and the proxy did not say `connection:
close`; anything else (an abandoned stream, a timeout, an error) closes it. When a reused
connection turns out to be closed or broken before any byte of the answer arrived (the proxy
restarted meanwhile), the request is sent once more on a fresh connection; every other failure
raises ProxyUnavailable as before, which callers turn into a refusal.

Trace context: when OpenTelemetry is importable and a span is current (Open WebUI with
`ENABLE_OTEL`: its request's span, or the governor's tool span), each request carries that span's
W3C `traceparent` (and `tracestate`), so the proxy's spans join Open WebUI's trace (docs/tracing.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from typing import AsyncIterator
from urllib.parse import quote

SOCKET_ENV = "SVC_RUNTIME_SOCKET_PATH"
TOKEN_ENV = "SVC_FRONTEND_TOKEN"
RUNTIME_TOKEN_ENV = "SVC_RUNTIME_TOKEN"
# Headers naming the front-end user (src/contract/local-api.ts USER_HEADERS).
USER_HEADERS = {"id": "x-svc-user-id", "email": "x-svc-user-email", "name": "x-svc-user-name"}
CONNECT_TIMEOUT = 5.0
DECIDE_TIMEOUT = 15.0
# A model may think for a long time before its first token; an idle stream is cut after this.
STREAM_IDLE_TIMEOUT = 600.0
# Idle kept-alive connections per event loop and socket path; more are closed when released.
POOL_MAX_IDLE = 16


class _Conn:
    __slots__ = ("reader", "writer", "path")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str):
        self.reader = reader
        self.writer = writer
        self.path = path

    def usable(self) -> bool:
        # At EOF: the proxy closed it while idle. Unread bytes: out of step; never reuse.
        return not self.reader.at_eof() and not self.writer.is_closing() and not getattr(self.reader, "_buffer", b"")

    def close(self) -> None:
        try:
            self.writer.close()
        except Exception:
            pass


# event loop -> socket path -> idle connections (most recently used last). Streams belong to
# the loop that opened them, so each loop (each thread running one) has its own pool.
_pools: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, list[_Conn]]]" = weakref.WeakKeyDictionary()


def _idle(path: str) -> list[_Conn]:
    return _pools.setdefault(asyncio.get_running_loop(), {}).setdefault(path, [])


def _take(path: str) -> _Conn | None:
    idle = _idle(path)
    while idle:
        conn = idle.pop()
        if conn.usable():
            return conn
        conn.close()
    return None


def _release(conn: _Conn) -> None:
    try:
        idle = _idle(conn.path)
    except RuntimeError:  # no running loop (released from a finalizer): just close
        conn.close()
        return
    if conn.usable() and len(idle) < POOL_MAX_IDLE:
        idle.append(conn)
    else:
        conn.close()


def close_idle_connections() -> None:
    """Close this event loop's idle kept-alive connections (tests; shutdown)."""
    try:
        pools = _pools.pop(asyncio.get_running_loop(), {})
    except RuntimeError:
        return
    for idle in pools.values():
        for conn in idle:
            conn.close()


class ProxyUnavailable(Exception):
    """The proxy's socket is missing, refused the connection, or answered garbage."""


def _token() -> str:
    return os.environ.get(TOKEN_ENV, "").strip() or os.environ.get(RUNTIME_TOKEN_ENV, "")


def socket_path() -> str:
    return os.environ.get(SOCKET_ENV, "")


def trace_headers() -> dict[str, str]:
    """The current OpenTelemetry span's `traceparent`/`tracestate`; {} without OpenTelemetry or a span."""
    try:
        from opentelemetry.propagate import inject
    except Exception:  # OpenTelemetry is Open WebUI's optional dependency
        return {}
    carrier: dict[str, str] = {}
    try:
        inject(carrier)
    except Exception:
        return {}
    return carrier


def header_value(value: object) -> str:
    """Plain printable ASCII as is; anything else (accents, control characters, "%")
    percent-encoded as UTF-8, encodeURIComponent style, for the proxy to decode."""
    text = "" if value is None else str(value)
    if all(32 <= ord(c) < 127 for c in text) and "%" not in text:
        return text
    return quote(text, safe="@._-+!~*'()")


def user_headers(user: dict | None) -> dict[str, str]:
    if not user or not user.get("id"):
        return {}
    out = {USER_HEADERS["id"]: header_value(user["id"])}
    if user.get("email"):
        out[USER_HEADERS["email"]] = header_value(user["email"])
    if user.get("name"):
        out[USER_HEADERS["name"]] = header_value(user["name"])
    return out


class Response:
    """Status, lower-cased headers and a body read on demand (Content-Length, chunked or EOF)."""

    def __init__(self, status: int, reason: str, headers: dict[str, str], reader: asyncio.StreamReader, writer, conn: _Conn | None = None, reusable: bool = False):
        self.status = status
        self.reason = reason
        self.headers = headers
        self._reader = reader
        self._writer = writer
        self._conn = conn
        # The connection may serve another request once this body has been read to its end.
        self._reusable = reusable
        self._done = False

    async def chunks(self, idle_timeout: float = STREAM_IDLE_TIMEOUT) -> AsyncIterator[bytes]:
        r = self._reader
        complete = False
        try:
            if "chunked" in self.headers.get("transfer-encoding", "").lower():
                while True:
                    size_line = await asyncio.wait_for(r.readline(), idle_timeout)
                    if not size_line:
                        return
                    size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                    if size == 0:
                        # Trailer fields (none expected) up to the empty line that ends the body.
                        while True:
                            line = await asyncio.wait_for(r.readline(), idle_timeout)
                            if line in (b"\r\n", b"\n", b""):
                                complete = line != b""
                                return
                    data = await asyncio.wait_for(r.readexactly(size), idle_timeout)
                    await asyncio.wait_for(r.readexactly(2), idle_timeout)  # CRLF after each chunk
                    yield data
            elif "content-length" in self.headers:
                remaining = int(self.headers["content-length"])
                while remaining > 0:
                    data = await asyncio.wait_for(r.read(min(remaining, 65536)), idle_timeout)
                    if not data:
                        return
                    remaining -= len(data)
                    yield data
                complete = True
            else:
                while True:
                    data = await asyncio.wait_for(r.read(65536), idle_timeout)
                    if not data:
                        return
                    yield data
        finally:
            self._finish(complete)

    def _finish(self, complete: bool) -> None:
        if self._done:
            return
        self._done = True
        if complete and self._reusable and self._conn is not None:
            _release(self._conn)
        else:
            self._close_transport()

    def _close_transport(self) -> None:
        try:
            self._writer.close()
        except Exception:
            pass

    async def lines(self, idle_timeout: float = STREAM_IDLE_TIMEOUT) -> AsyncIterator[str]:
        """The body split into lines (without the line ending), yielded as they arrive."""
        buf = b""
        async for data in self.chunks(idle_timeout):
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                yield line.rstrip(b"\r").decode("utf-8", errors="replace")
        if buf:
            yield buf.rstrip(b"\r").decode("utf-8", errors="replace")

    async def read(self, timeout: float = DECIDE_TIMEOUT) -> bytes:
        return b"".join([c async for c in self.chunks(timeout)])

    async def json(self, timeout: float = DECIDE_TIMEOUT):
        raw = await self.read(timeout)
        try:
            return json.loads(raw or b"null")
        except ValueError as e:
            raise ProxyUnavailable(f"the proxy answered HTTP {self.status} with a body that is not JSON") from e

    def close(self) -> None:
        """Done with this answer without reading (the rest of) its body: the connection is closed."""
        if not self._done:
            self._done = True
            self._close_transport()


async def _connect(sock: str) -> _Conn:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(sock, limit=1 << 20), CONNECT_TIMEOUT)
    except (OSError, asyncio.TimeoutError) as e:
        raise ProxyUnavailable(f"cannot connect to the proxy socket {sock}: {type(e).__name__}") from e
    return _Conn(reader, writer, sock)


class _StaleConnection(Exception):
    """A reused connection was closed or broken before any byte of the answer arrived."""


async def _exchange(conn: _Conn, data: bytes, method: str, path: str, timeout: float, reused: bool) -> Response:
    reader, writer = conn.reader, conn.writer
    got_answer = False
    try:
        writer.write(data)
        await asyncio.wait_for(writer.drain(), timeout)
        status_line = await asyncio.wait_for(reader.readline(), timeout)
        if not status_line and reused:
            raise ConnectionResetError("closed before an answer")
        got_answer = True
        parts = status_line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise ProxyUnavailable("the proxy closed the connection without an HTTP answer")
        status = int(parts[1])
        resp_headers: dict[str, str] = {}
        while True:
            line = await asyncio.wait_for(reader.readline(), timeout)
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            resp_headers[k.strip().lower()] = v.strip()
    except ProxyUnavailable:
        conn.close()
        raise
    except (ConnectionError, BrokenPipeError) as e:
        conn.close()
        if reused and not got_answer:
            raise _StaleConnection() from e
        raise ProxyUnavailable(f"the proxy did not answer {method} {path}: {type(e).__name__}") from e
    except (OSError, ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
        conn.close()
        raise ProxyUnavailable(f"the proxy did not answer {method} {path}: {type(e).__name__}") from e
    reusable = parts[0] == "HTTP/1.1" and "close" not in resp_headers.get("connection", "").lower()
    return Response(status, parts[2] if len(parts) > 2 else "", resp_headers, reader, writer, conn, reusable)


async def request(
    method: str,
    path: str,
    *,
    body: object = None,
    headers: dict[str, str] | None = None,
    timeout: float = DECIDE_TIMEOUT,
    auth: bool = True,
) -> Response:
    """Send one request; returns once the status line and headers have arrived."""
    sock = socket_path()
    if not sock:
        raise ProxyUnavailable(f"{SOCKET_ENV} is not set")
    payload = b"" if body is None else json.dumps(body, separators=(",", ":")).encode("utf-8")
    head = {"host": "svc-proxy", "accept": "application/json, text/event-stream"}
    if auth:
        head["authorization"] = f"Bearer {_token()}"
    if body is not None:
        head["content-type"] = "application/json"
    head["content-length"] = str(len(payload))
    head.update(trace_headers())
    for k, v in (headers or {}).items():
        head[k.lower()] = v
    lines = [f"{method} {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in head.items()]
    data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload
    conn = _take(sock)
    if conn is not None:
        try:
            return await _exchange(conn, data, method, path, timeout, reused=True)
        except _StaleConnection:
            pass  # the proxy closed it meanwhile (e.g. restarted): once more on a fresh connection
    conn = await _connect(sock)
    try:
        return await _exchange(conn, data, method, path, timeout, reused=False)
    except _StaleConnection as e:  # only raised for reused connections; kept for safety
        raise ProxyUnavailable(f"the proxy did not answer {method} {path}") from e


async def post_json(path: str, body: object, timeout: float = DECIDE_TIMEOUT) -> tuple[int, object]:
    resp = await request("POST", path, body=body, timeout=timeout)
    return resp.status, await resp.json(timeout)


async def readiness(timeout: float = 3.0) -> tuple[bool, str]:
    """(ready, reason). Never raises: an unreachable proxy is simply not ready."""
    try:
        resp = await request("GET", "/readyz", timeout=timeout, auth=False)
        raw = await resp.read(timeout)
    except ProxyUnavailable as e:
        return False, str(e)
    if resp.status == 200:
        return True, "ready"
    reason = raw.decode("utf-8", errors="replace").strip()
    try:
        doc = json.loads(reason)
        if isinstance(doc, dict):
            reason = str(doc.get("reason") or doc.get("detail") or doc.get("state") or reason)
    except ValueError:
        pass
    return False, f"HTTP {resp.status}: {reason[:300]}" if reason else f"HTTP {resp.status}"


def error_text(status: int, raw: bytes) -> str:
    """The message of an error body: svc refusal `message`, problem `detail`, or OpenAI `error.message`."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        return text[:500] or f"HTTP {status}"
    if isinstance(doc, dict):
        err = doc.get("error")
        for candidate in (
            doc.get("message"),
            doc.get("detail"),
            err.get("message") if isinstance(err, dict) else err,
            doc.get("title"),
        ):
            if isinstance(candidate, str) and candidate:
                return candidate
    return text[:500] or f"HTTP {status}"


def _error_field(raw: bytes, name: str) -> str:
    """A string field of an error body, at the top ({name}) or under {error: {name}}; else ""."""
    try:
        doc = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return ""
    if not isinstance(doc, dict):
        return ""
    err = doc.get("error") if isinstance(doc.get("error"), dict) else {}
    value = doc.get(name) or err.get(name)
    return value if isinstance(value, str) else ""


def error_code(raw: bytes) -> str:
    """The refusal code of an error body ({code} or {error: {code}}), if any."""
    return _error_field(raw, "code")


def claim_url(raw: bytes) -> str:
    """The claim link of a refusal body ({claim_url} or {error: {claim_url}}), if any."""
    return _error_field(raw, "claim_url")
