"""A real OAuth-protected MCP resource server for svc's per-user OAuth tests (issue 32): the
official Python SDK's MCPServer (formerly FastMCP) with its bearer-token verification, over
Streamable HTTP with TLS. It verifies each access token as a JWT against the authorization
server's JWKS (PyJWT): signature, issuer, expiry, and that the token was issued for this server
(`aud` = the RFC 8707 resource). Requests without a valid token are answered 401 with
`WWW-Authenticate: Bearer ... resource_metadata=...` (RFC 9728), and the server publishes its
protected-resource metadata at /.well-known/oauth-protected-resource/mcp. `whoami` echoes the
subject of the token the call came with; every call is logged (tool, subject) to --calls.

usage: python oauth_notes_server.py --port N --cert server.pem --key server.key --calls calls.jsonl
       --issuer https://as.example --jwks http://as/jwks [--ca ca.pem]
"""

import argparse
import json
import ssl

import jwt
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--cert", required=True)
parser.add_argument("--key", required=True)
parser.add_argument("--calls", required=True)
parser.add_argument("--issuer", required=True)
parser.add_argument("--jwks", required=True)
parser.add_argument("--ca", default=None)
opts = parser.parse_args()

RESOURCE = f"https://127.0.0.1:{opts.port}/mcp"
ssl_ctx = ssl.create_default_context(cafile=opts.ca) if opts.ca else None
jwks = jwt.PyJWKClient(opts.jwks, cache_keys=True, ssl_context=ssl_ctx) if ssl_ctx else jwt.PyJWKClient(opts.jwks, cache_keys=True)


class JwtVerifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = jwks.get_signing_key_from_jwt(token)
            claims = jwt.decode(token, key.key, algorithms=["RS256", "ES256", "PS256"], audience=RESOURCE, issuer=opts.issuer, options={"require": ["exp", "sub", "aud"]})
        except Exception as e:  # noqa: BLE001 - any failure is "not a valid token"
            seen("refused", {"why": type(e).__name__})
            return None
        return AccessToken(token=token, client_id=str(claims.get("client_id", "")), scopes=str(claims.get("scope", "")).split(), expires_at=claims.get("exp"), resource=RESOURCE, subject=claims["sub"])


server = MCPServer(
    "oauth-notes",
    token_verifier=JwtVerifier(),
    auth=AuthSettings(issuer_url=opts.issuer, resource_server_url=RESOURCE, validate_token_resource=True, required_scopes=["notes"]),
)


def seen(tool: str, extra: dict) -> None:
    with open(opts.calls, "a") as f:
        f.write(json.dumps({"tool": tool, **extra}) + "\n")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def whoami() -> str:
    """Who the server sees calling: the access token's subject."""
    tok = get_access_token()
    subject = tok.subject if tok else None
    seen("whoami", {"subject": subject})
    return f"subject={subject}"


uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=opts.port, ssl_certfile=opts.cert, ssl_keyfile=opts.key, log_level="warning")
