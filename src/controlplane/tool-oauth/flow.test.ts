// The refusals of the OAuth discovery a tool server's consent starts with (flow.ts), against a
// server on loopback that answers as an MCP server and its authorization server would: the
// protected-resource metadata (RFC 9728) behind the 401, and the authorization server's
// metadata (RFC 8414), each changed the one way a refusal is about.
import { afterAll, describe, expect, test } from "bun:test";
import { SvcError } from "../../contract/errors.ts";
import { discover, register } from "./flow.ts";

type Served = { prm: Record<string, unknown>; as: Record<string, unknown> };
let served: Served;
const server = Bun.serve({
  port: 0,
  fetch(req: Request): Response {
    const path = new URL(req.url).pathname;
    if (path === "/mcp") return new Response("unauthorized", { status: 401, headers: { "www-authenticate": `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"` } });
    if (path.startsWith("/.well-known/oauth-protected-resource")) return Response.json(served.prm);
    if (path === "/.well-known/oauth-authorization-server") return Response.json(served.as);
    return new Response("not found", { status: 404 });
  },
});
const base = `http://127.0.0.1:${server.port}`;
afterAll(async () => server.stop(true));

const goodAs = () => ({
  issuer: base,
  authorization_endpoint: `${base}/authorize`,
  token_endpoint: `${base}/token`,
  registration_endpoint: `${base}/register`,
  response_types_supported: ["code"],
  code_challenge_methods_supported: ["S256"],
});
const goodPrm = () => ({ resource: `${base}/mcp`, authorization_servers: [base] });

async function refusal(p: Promise<unknown>): Promise<SvcError> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(SvcError);
  return e as SvcError;
}

describe("OAuth discovery of a tool server", () => {
  test("a well-formed server and authorization server are discovered: the resource is the server's URL", async () => {
    served = { prm: goodPrm(), as: goodAs() };
    const d = await discover(`${base}/mcp`, fetch);
    expect(d).toMatchObject({ issuer: base, resource: `${base}/mcp` });
  });

  test("metadata naming no authorization server is refused", async () => {
    served = { prm: { resource: `${base}/mcp` }, as: goodAs() };
    expect((await refusal(discover(`${base}/mcp`, fetch))).message).toContain("names no authorization server");
  });

  test("a resource that is not the server's URL is refused, also one that is only a string prefix of it", async () => {
    for (const resource of [`${base}/other`, `${base}/mc`, "https://elsewhere.example.com/mcp"]) {
      served = { prm: { resource, authorization_servers: [base] }, as: goodAs() };
      expect((await refusal(discover(`${base}/mcp`, fetch))).message).toContain("which is not the server's URL");
    }
    // a parent path of the server's URL is its resource (RFC 8707 lets one cover several)
    served = { prm: { resource: `${base}/`, authorization_servers: [base] }, as: goodAs() };
    expect((await discover(`${base}/mcp`, fetch)).issuer).toBe(base);
  });

  test("an authorization server without PKCE S256 is refused (OAuth 2.1)", async () => {
    for (const methods of [undefined, ["plain"]]) {
      served = { prm: goodPrm(), as: { ...goodAs(), code_challenge_methods_supported: methods } };
      expect((await refusal(discover(`${base}/mcp`, fetch))).message).toContain("does not offer PKCE with S256");
    }
  });

  test("without dynamic registration, svc asks for an admin's client instead of registering", async () => {
    served = { prm: goodPrm(), as: { ...goodAs(), registration_endpoint: undefined } };
    const d = await discover(`${base}/mcp`, fetch);
    expect((await refusal(register(d, `${base}/callback`, fetch))).message).toContain("--oauth-client-id");
  });
});
