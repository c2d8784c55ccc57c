// Identity-assertion keys and a tool server's assertion settings (issue 32): the header rules
// (http only, not reserved, not a secret header), the key made on first need, the JWKS
// (unauthenticated, cacheable, no private half), the runtime's key sealed to the calling replica
// alone, rotation keeping the previous key published for its window (or withdrawing it), the
// admin trail's before/after, and the bundle naming the current key.
import { describe, expect, test } from "bun:test";
import { Decrypter } from "age-encryption";
import { RETIRED_KEY_PUBLISHED_SECONDS, jwksPath } from "../../contract/identity-assertion.ts";
import { agentAndInstallation, fakeReplica, sealKey } from "../auth/test-fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";

const kb = { name: "kb", transport: "http", url: "https://kb.example.com/mcp", workspace: "default", assertion_header: "X-Svc-Identity" };

async function withRuntime(cp: TestControlPlane) {
  const { agentId, installationId } = await agentAndInstallation(cp);
  const token = (await cp.call("POST", cp.org(`/installations/${installationId}/credential`), { body: {} })).json.token as string;
  const replica = await fakeReplica(cp, installationId);
  return { agentId, installationId, token, replica };
}

const jwks = async (cp: TestControlPlane) => cp.call("GET", jwksPath(cp.orgId), { token: null });

describe("a tool server's assertion settings", () => {
  test("refused by name: a stdio server, a reserved header, a secret's header, an audience without a header, a bad header name", async () => {
    const cp = await testControlPlane();
    const { installationId } = await agentAndInstallation(cp);
    const replica = await fakeReplica(cp, installationId);
    const cases: [unknown, string, string][] = [
      [{ name: "t", transport: "stdio", command: "x", workspace: "default", assertion_header: "X-Id" }, "/assertion_header", 'only a transport "http" server'],
      [{ ...kb, assertion_header: "Mcp-Session-Id" }, "/assertion_header", "set by the MCP transport itself"],
      [{ ...kb, assertion_header: "bad header" }, "/assertion_header", "is not an HTTP header name"],
      [{ ...kb, assertion_header: undefined, assertion_audience: "urn:x" }, "/assertion_audience", "comes with assertion_header"],
      [
        { ...kb, assertion_header: "authorization", secrets_sealed: await sealKey([replica.recipient], '{"Authorization":"Bearer x"}'), secret_names: ["Authorization"], sealed_to: [replica.id] },
        "/assertion_header",
        "one of the server's secret headers",
      ],
    ];
    for (const [body, path, words] of cases) {
      const r = await cp.call("POST", cp.org("/tool-servers"), { body });
      expect(r.status).toBe(422);
      expect(r.json.errors?.[0]?.path ?? r.json.errors?.[0]?.path).toBe(path);
      expect(r.json.detail).toContain(words);
    }
    // no server, so no key was made
    expect((await jwks(cp)).json.keys).toEqual([]);
  });

  test("create makes the organization's key; show, the admin trail's before/after and the bundle carry the settings; a secret may not take the header later", async () => {
    const cp = await testControlPlane();
    const rt = await withRuntime(cp);
    const created = await cp.call("POST", cp.org("/tool-servers"), { body: kb });
    expect(created.status).toBe(201);
    expect(created.json.assertion).toEqual({ header: "X-Svc-Identity", audience: "https://kb.example.com/mcp" });
    const keys = (await jwks(cp)).json.keys as { kid: string; kty: string; crv: string; alg: string; d?: string }[];
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
    expect(keys[0]).not.toHaveProperty("d");

    await cp.call("POST", cp.org(`/tool-servers/${created.json.id}/assign`), { body: { agent_id: rt.agentId } });
    const changed = await cp.call("PATCH", cp.org("/tool-servers/kb"), { body: { assertion_audience: "urn:kb" } });
    expect(changed.json.assertion).toEqual({ header: "X-Svc-Identity", audience: "urn:kb" });
    const bundle = (await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2", { token: rt.token })).json;
    expect(bundle.assertion_key_id).toBe(keys[0]!.kid);
    expect(bundle.tool_servers[0].assertion).toEqual({ header: "X-Svc-Identity", audience: "urn:kb" });
    const trail = (await cp.call("GET", cp.org("/audit-records?kind=admin&limit=50"))).json.records.find((r: any) => r.action === "tool_server.update");
    expect(trail.admin.before.assertion).toEqual({ header: "X-Svc-Identity", audience: "https://kb.example.com/mcp" });
    expect(trail.admin.after.assertion).toEqual({ header: "X-Svc-Identity", audience: "urn:kb" });

    const clash = await cp.call("PUT", cp.org("/tool-servers/kb/secrets"), {
      body: { secrets_sealed: await sealKey([rt.replica.recipient], '{"x-svc-identity":"v"}'), secret_names: ["x-svc-identity"], sealed_to: [rt.replica.id] },
    });
    expect(clash.status).toBe(422);
    expect(clash.json.detail).toContain("secret headers");
    const off = await cp.call("PATCH", cp.org("/tool-servers/kb"), { body: { assertion_header: null } });
    expect(off.json.assertion).toBeNull();
    const later = (await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2", { token: rt.token })).json;
    expect(later).not.toHaveProperty("assertion_key_id");
    expect(later.tool_servers[0]).not.toHaveProperty("assertion");
  });
});

describe("the runtime's key, the JWKS and rotation", () => {
  test("the key is sealed to the calling replica alone; another replica or none is refused; the JWKS is public and cacheable", async () => {
    const cp = await testControlPlane();
    const rt = await withRuntime(cp);
    await cp.call("POST", cp.org("/tool-servers"), { body: kb });
    const got = await cp.call("GET", "/api/v1/runtime/assertion-key", { token: rt.token, headers: { "x-svc-replica": rt.replica.id } });
    expect(got.status).toBe(200);
    expect(got.json).toMatchObject({ id: expect.stringMatching(/^ak_/), alg: "ES256", issuer: cp.deps.config.publicUrl });
    expect(got.text).not.toContain('"d"');
    const d = new Decrypter();
    d.addIdentity(rt.replica.identity);
    const jwk = JSON.parse(await d.decrypt(Buffer.from(got.json.sealed_private_jwk, "base64"), "text"));
    expect(jwk).toMatchObject({ kty: "EC", crv: "P-256", kid: got.json.id, d: expect.any(String) });

    const other = await withRuntime(cp);
    const foreign = await cp.call("GET", "/api/v1/runtime/assertion-key", { token: rt.token, headers: { "x-svc-replica": other.replica.id } });
    expect(foreign.status).toBe(409);
    expect((await cp.call("GET", "/api/v1/runtime/assertion-key", { token: rt.token })).status).toBe(422);
    expect((await cp.call("GET", "/api/v1/runtime/assertion-key", { token: null, headers: { "x-svc-replica": rt.replica.id } })).status).toBe(401);

    const pub = await jwks(cp);
    expect(pub.status).toBe(200);
    expect(pub.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
    const secret = String(jwk.d);
    const texts = [pub.text, (await cp.call("GET", cp.org("/assertion-keys"))).text, (await cp.call("GET", cp.org("/tool-servers/kb"))).text];
    for (const text of texts) expect(typeof text === "string" && text.length > 0 && !text.includes(secret)).toBe(true);
    expect((await cp.call("GET", jwksPath("org_unknown"), { token: null })).json).toEqual({ keys: [] });
  });

  test("rotate keeps the previous key published for its window, then drops it; withdraw_previous drops it at once; the trail names ids only", async () => {
    let now = Date.parse("2026-11-28T00:00:00Z");
    const cp = await testControlPlane({ now: () => now });
    await cp.call("POST", cp.org("/tool-servers"), { body: kb });
    const first = (await jwks(cp)).json.keys[0].kid as string;
    const r1 = await cp.call("POST", cp.org("/assertion-keys"), { body: {} });
    expect(r1.status).toBe(201);
    expect(r1.json.retired).toMatchObject({ id: first, status: "retired" });
    const second = r1.json.key.id as string;
    expect((await jwks(cp)).json.keys.map((k: { kid: string }) => k.kid)).toEqual([second, first]);
    now += RETIRED_KEY_PUBLISHED_SECONDS * 1000 - 1;
    expect((await jwks(cp)).json.keys).toHaveLength(2);
    now += 2;
    expect((await jwks(cp)).json.keys.map((k: { kid: string }) => k.kid)).toEqual([second]);

    const r2 = await cp.call("POST", cp.org("/assertion-keys"), { body: { withdraw_previous: true } });
    expect(r2.json.retired).toMatchObject({ id: second, status: "withdrawn" });
    expect((await jwks(cp)).json.keys.map((k: { kid: string }) => k.kid)).toEqual([r2.json.key.id]);
    const listed = (await cp.call("GET", cp.org("/assertion-keys"))).json.keys.map((k: { status: string }) => k.status);
    expect(listed).toEqual(["expired", "withdrawn", "current"]);
    const events = (await cp.call("GET", cp.org("/audit-records?kind=admin&limit=50"))).json.records.filter((r: any) => r.action === "assertion_key.rotate");
    expect(events.map((e: any) => e.admin.after.current).sort()).toEqual([second, r2.json.key.id].sort());
    expect(events.every((e: any) => e.admin.severity === "high")).toBe(true);
  });
});
