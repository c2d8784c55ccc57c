"""A real MCP server for svc's tests: the official Python SDK's MCPServer (formerly FastMCP)
served over Streamable HTTP with TLS. Every call it receives is appended as one JSON line to
$NOTES_CALL_LOG, so a test can prove the upstream saw a call, or never did.

usage: python notes_server.py --port N --cert server.pem --key server.key --calls calls.jsonl
       [--require-header NAME=VALUE]   (requests without that header are answered 401)
       [--otlp URL]   (the SDK's spans exported by OTLP/HTTP to URL, and each HTTP request's
                       `traceparent` header appended to the call log as {"http_traceparent": …})
       python notes_server.py --stdio --calls calls.jsonl [--otlp URL]   (over stdio instead)

With --otlp the OpenTelemetry SDK is set up as an instrumented server sets it up; the MCP SDK's
own server middleware then makes a span `tools/call <tool>` for each call, the child of the
caller's trace context in `params._meta` (SEP-414).
"""

import argparse
import asyncio
import json

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int)
parser.add_argument("--cert")
parser.add_argument("--key")
parser.add_argument("--stdio", action="store_true")
parser.add_argument("--otlp", default=None)
parser.add_argument("--calls", required=True)
parser.add_argument("--require-header", default=None)
opts = parser.parse_args()

if opts.otlp:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "notes-mcp"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=opts.otlp), schedule_delay_millis=200))
    trace.set_tracer_provider(provider)

server = MCPServer("notes")


def seen(tool: str, args: dict) -> None:
    with open(opts.calls, "a") as f:
        f.write(json.dumps({"tool": tool, "args": args}) + "\n")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup(term: str) -> str:
    """Look a term up in the notes (read-only)."""
    seen("lookup", {"term": term})
    return f"note about {term}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
def add_note(text: str) -> str:
    """Add a note (writes)."""
    seen("add_note", {"text": text})
    return f"added: {text}"


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer (timeouts and cancellation)."""
    seen("slow", {"seconds": seconds})
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        seen("slow.cancelled", {"seconds": seconds})
        raise
    return "slept"


@server.tool()
def big(kib: int) -> str:
    """Answer with kib KiB of text (result size limits)."""
    seen("big", {"kib": kib})
    return "x" * (kib * 1024)


@server.tool()
def count(n: int) -> str:
    """Answer with the integer as received (Python's ints are exact: numbers beyond 2^53)."""
    seen("count", {"n": n})
    return f"counted {n}"


@server.tool(name="bad-name")
def bad_name() -> str:
    """A kebab-case name (svc governs it as it is: notes.bad-name)."""
    seen("bad-name", {})
    return "dashes are fine"


@server.tool(name="files.read")
def files_read(path: str) -> str:
    """A dotted name (svc governs it escaped: notes.files--2eread)."""
    seen("files.read", {"path": path})
    return f"read {path}"


# Names that are Object.prototype's in JavaScript: each is a tool like any other.
def _proto_tool(name: str):
    def tool() -> str:
        seen(name, {})
        return f"I am {name}"

    return tool


for _name in ("toString", "constructor", "valueOf", "__proto__"):
    server.add_tool(_proto_tool(_name), name=_name, description=f"A tool named {_name}", annotations=ToolAnnotations(readOnlyHint=True))


if opts.stdio:
    server.run("stdio")
    raise SystemExit(0)

app = server.streamable_http_app()

if opts.otlp:
    traced = app

    async def app(scope, receive, send):  # type: ignore[no-redef]
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            if scope["method"] == "POST" and "traceparent" in headers:
                with open(opts.calls, "a") as f:
                    f.write(json.dumps({"http_traceparent": headers["traceparent"]}) + "\n")
        await traced(scope, receive, send)

if opts.require_header:
    name, _, value = opts.require_header.partition("=")
    inner = app

    async def app(scope, receive, send):  # type: ignore[no-redef]
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            if headers.get(name.lower()) != value:
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"missing credential"})
                return
        await inner(scope, receive, send)


uvicorn.run(app, host="127.0.0.1", port=opts.port, ssl_certfile=opts.cert, ssl_keyfile=opts.key, log_level="warning")
