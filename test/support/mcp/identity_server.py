"""An in-house MCP server that verifies svc's signed identity assertions (issue 32), as
docs/mcp.md shows it: the official Python SDK's MCPServer over Streamable HTTP with TLS, behind
an ASGI check that verifies the assertion header with PyJWT against the control plane's JWKS
(PyJWKClient), pins the algorithm, issuer and audience, requires exp/iat/jti, and refuses a jti
it has seen before (a replay cache kept until each token's exp). The `whoami` tool answers
with the identity the request's assertion named. For the tests, every verdict is appended to
the --log file as one JSON line (the raw token too: the tests present it again).

usage: python identity_server.py --port N --cert server.pem --key server.key --log verdicts.jsonl
         --jwks URL --issuer ISS --audience AUD [--header X-Svc-Identity] [--jwks-lifespan S]
"""

import argparse
import json
import threading
import time

import jwt
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--cert", required=True)
parser.add_argument("--key", required=True)
parser.add_argument("--log", required=True)
parser.add_argument("--jwks", required=True)
parser.add_argument("--issuer", required=True)
parser.add_argument("--audience", required=True)
parser.add_argument("--header", default="X-Svc-Identity")
parser.add_argument("--jwks-lifespan", type=float, default=300)
opts = parser.parse_args()

# The JWKS is cached for --jwks-lifespan seconds; an unknown kid (a rotation) fetches it again at once.
jwks = jwt.PyJWKClient(opts.jwks, lifespan=opts.jwks_lifespan, cooldown_duration=0)
seen_jti: dict[str, int] = {}  # jti -> exp: kept only until the token would expire anyway
seen_lock = threading.Lock()
# The claims of each verified token, for the tool to read: the MCP SDK runs tools in the
# session's task, not the request's, so the tool looks its request's token up here.
verified: dict[str, dict] = {}


def log(entry: dict) -> None:
    with open(opts.log, "a") as f:
        f.write(json.dumps(entry) + "\n")


def verify(token: str) -> dict:
    key = jwks.get_signing_key_from_jwt(token)
    claims = jwt.decode(
        token,
        key,
        algorithms=["ES256"],
        issuer=opts.issuer,
        audience=opts.audience,
        options={"require": ["exp", "iat", "jti", "sub", "iss", "aud"]},
        leeway=5,
    )
    now = int(time.time())
    with seen_lock:
        for j, exp in list(seen_jti.items()):
            if exp + 5 < now:
                del seen_jti[j]
        for t, c in list(verified.items()):
            if c["exp"] + 5 < now:
                del verified[t]
        if claims["jti"] in seen_jti:
            raise jwt.InvalidTokenError("replayed jti")
        seen_jti[claims["jti"]] = claims["exp"]
        verified[token] = claims
    return claims


server = MCPServer("kb")


@server.tool()
def whoami(ctx: Context) -> str:
    """Who the call is for, as the identity assertion says."""
    c = verified[ctx.headers.get(opts.header.lower())]
    return json.dumps({k: c.get(k) for k in ("sub", "email", "groups", "tool", "audit_record_id", "jti")})


inner = server.streamable_http_app()
header = opts.header.lower().encode()


async def app(scope, receive, send):
    if scope["type"] != "http":
        return await inner(scope, receive, send)
    token = next((v.decode() for k, v in scope["headers"] if k == header), None)
    try:
        if token is None:
            raise jwt.InvalidTokenError(f"no {opts.header} header")
        claims = verify(token)
    except (jwt.PyJWTError, jwt.PyJWKClientError) as e:
        log({"verdict": "refused", "why": str(e), "token": token})
        await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": f"identity assertion refused: {e}".encode()})
        return
    log({"verdict": "accepted", "claims": claims, "kid": jwt.get_unverified_header(token).get("kid"), "token": token})
    await inner(scope, receive, send)


uvicorn.run(app, host="127.0.0.1", port=opts.port, ssl_certfile=opts.cert, ssl_keyfile=opts.key, log_level="warning")
