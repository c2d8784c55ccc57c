// Signed identity assertions end to end (issue 32): a real control plane and proxy, and real
// in-house MCP servers (identity_server.py: the Python SDK's MCPServer over https with the test
// CA, which the proxy trusts through SVC_PROXY_CA_FILE) verifying each request's assertion with
// PyJWT against the control plane's JWKS. Alice's call reaches the tool as alice and Bob's as
// bob; the outcome record names the jti and subject presented; a replayed assertion and one for
// another audience are refused; a rotation keeps what the previous key signed valid, and a
// withdrawal refuses it. Red team: the private key is in clear in no bundle, log, admin answer,
// admin event or state file.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Decrypter } from "age-encryption";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { jwksPath } from "../../src/contract/identity-assertion.ts";
import { signSession } from "../../src/proxy/mcp/session-jwt.ts";
import { addPolicy, adminApi, type Api, type ProxyProcess, proxyDirs, proxyEnv, type Scenario, setUpScenario, startProxy, waitFor } from "../../src/proxy/testing/integration.ts";
import { type ControlPlaneProcess, cleanup, freePort, startControlPlane } from "../support/controlplane-process.ts";
import { type IdentityServer, startIdentityServer } from "../support/mcp/servers.ts";
import { testTls } from "../support/tls.ts";
import { filesHolding, svc } from "./cli-support.ts";

setDefaultTimeout(60_000);
const SECRET = "chatui-secret-identity";
const AUDIENCE = "urn:svc-test:kb";
let cp: ControlPlaneProcess;
let api: Api;
let s: Scenario;
let px: ProxyProcess;
let stateDir: string;
let a: IdentityServer; // the server svc calls
let b: IdentityServer; // the same audience, a replay cache of its own: where captured assertions are presented again
let other: IdentityServer; // another audience
const mcpPort = freePort();

const cli = async (args: string[]) => {
  const r = await svc(cp, args);
  if (r.code !== 0) throw new Error(`svc ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
};

async function gateway(remoteUser: string): Promise<Client> {
  const c = new Client({ name: "test", version: "1" });
  const token = signSession({ id: remoteUser, jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000) }, SECRET);
  await c.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${mcpPort}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return c;
}

/** Calls kb.whoami through the gateway; the identity the server saw, and the raw assertion it verified. */
async function whoami(remoteUser: string): Promise<{ seen: Record<string, any>; token: string; kid: string }> {
  const c = await gateway(remoteUser);
  try {
    const r = (await c.callTool({ name: "kb.whoami", arguments: {} })) as { content: { text: string }[]; isError?: boolean };
    if (r.isError) throw new Error(`kb.whoami failed: ${r.content.map((x) => x.text).join("")}`);
    const seen = JSON.parse(r.content[0]!.text) as Record<string, any>;
    const v = a.verdicts().find((x) => x.verdict === "accepted" && x.claims?.jti === seen.jti)!;
    return { seen, token: v.token!, kid: v.kid! };
  } finally {
    await c.close();
  }
}

/** Presents an assertion to a server by hand: the status of an MCP initialize carrying it. */
async function present(server: IdentityServer, token: string): Promise<number> {
  const res = await fetch(server.url, {
    method: "POST",
    headers: { "x-svc-identity": token, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
    tls: { ca: testTls().ca },
  } as RequestInit);
  await res.arrayBuffer();
  return res.status;
}

const lastVerdict = (server: IdentityServer, token: string) =>
  server
    .verdicts()
    .filter((v) => v.token === token)
    .at(-1);

beforeAll(async () => {
  cp = await startControlPlane();
  api = adminApi(cp);
  s = await setUpScenario(api);
  const jwks = `${cp.url}${jwksPath(cp.orgId)}`;
  [a, b, other] = await Promise.all([
    startIdentityServer({ jwks, issuer: cp.url, audience: AUDIENCE, jwksLifespanSeconds: 0.5 }),
    startIdentityServer({ jwks, issuer: cp.url, audience: AUDIENCE, jwksLifespanSeconds: 0.5 }),
    startIdentityServer({ jwks, issuer: cp.url, audience: "urn:svc-test:someone-else" }),
  ]);
  const d = proxyDirs();
  stateDir = d.stateDir;
  px = startProxy(
    proxyEnv(
      cp.url,
      s.runtimeToken,
      {
        SVC_PROXY_POLL_INTERVAL: "1s",
        CHATUI_SECRET_KEY: SECRET,
        SVC_PROXY_MCP_PORT: String(mcpPort),
        // the documented outbound trust setting: the test CA signed the MCP servers' certificates
        SVC_PROXY_CA_FILE: testTls().caFile,
      },
      d,
    ),
  );
  await px.waitReady();
  await cli(["tool-servers", "create", "kb", "--url", a.url, "--assertion-header", "X-Svc-Identity", "--assertion-audience", AUDIENCE, "--workspace", s.workspace, "--agent", s.agentId]);
  await addPolicy(api, s, "*", "tool:kb.whoami");
  // the runtime fetches the key, connects (its own requests asserted as the installation), lists, registers
  await waitFor(
    async () => {
      const c = await gateway(s.users.alice!.remote);
      try {
        return (await c.listTools()).tools.some((t) => t.name === "kb.whoami");
      } finally {
        await c.close();
      }
    },
    `kb.whoami served through the gateway\n${px.logs()}`,
    30_000,
  );
});

afterAll(async () => {
  await px?.stop();
  await Promise.all([a?.stop(), b?.stop(), other?.stop()]);
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

test("each user's call reaches the server as that user: sub, email, groups, tool and audit record id, verified against the JWKS", async () => {
  const alice = await whoami(s.users.alice!.remote);
  expect(alice.seen).toMatchObject({ sub: s.users.alice!.id, email: s.users.alice!.email, groups: ["sales-helpdesk"], tool: "whoami" });
  expect(alice.seen.audit_record_id).toMatch(/^rec_/);
  const bob = await whoami(s.users.bob!.remote);
  expect(bob.seen).toMatchObject({ sub: s.users.bob!.id, email: s.users.bob!.email, groups: [], tool: "whoami" });
  expect(bob.seen.jti).not.toBe(alice.seen.jti);
  // the runtime's own requests (connect, list) are asserted as the installation, with no user
  const own = a.verdicts().find((v) => v.verdict === "accepted" && v.claims?.sub === s.installationId);
  expect(own?.claims).not.toHaveProperty("email");
  const header = JSON.parse(Buffer.from(alice.token.split(".")[0]!, "base64url").toString()) as Record<string, unknown>;
  const claims = JSON.parse(Buffer.from(alice.token.split(".")[1]!, "base64url").toString()) as Record<string, number>;
  expect(header).toMatchObject({ alg: "ES256", typ: "JWT" });
  expect(header.kid).toMatch(/^ak_/);
  expect(claims.exp! - claims.iat!).toBe(60);

  // the decision's outcome record names what was presented (kind, jti, subject), never the assertion
  let outcome: any = null;
  await waitFor(async () => {
    const r = await api("GET", `/audit-records?installation=${s.installationId}&kind=outcome&limit=100`);
    outcome = (r.json.records as any[]).find((x) => x.ref === alice.seen.audit_record_id) ?? null;
    return outcome !== null;
  }, "the outcome record of alice's call at the control plane");
  expect(outcome.upstream_identity).toEqual({ kind: "assertion", jti: alice.seen.jti, subject: s.users.alice!.id });
  expect(JSON.stringify(outcome)).not.toContain(alice.token.split(".")[2]!);
  const shown = (await cli(["audit", "show", outcome.id])).stdout;
  expect(shown).toContain(`upstream identity: assertion ${s.users.alice!.id} (jti ${alice.seen.jti})`);
  const exported = (await cli(["audit", "export", "--format", "jsonl"])).stdout;
  expect(exported).toContain(`"jti":"${alice.seen.jti}"`);
});

test("a replayed assertion is refused by the server's jti cache, and one for another audience by its audience", async () => {
  const { token } = await whoami(s.users.alice!.remote);
  expect(await present(a, token)).toBe(401);
  expect(lastVerdict(a, token)).toMatchObject({ verdict: "refused", why: "replayed jti" });
  expect(await present(other, token)).toBe(401);
  expect(lastVerdict(other, token)?.why).toContain("Audience");
  // the same assertion at a server of the right audience that never saw it: accepted once
  expect(await present(b, token)).toBe(200);
  expect(await present(b, token)).toBe(401);
});

test("rotation: what the previous key signed stays valid until it expires; a withdrawn key's assertions are refused", async () => {
  const before = await whoami(s.users.alice!.remote);
  const rotated = await cli(["tool-servers", "assertion-keys", "rotate"]);
  expect(rotated.stdout).toContain(`${before.kid} is retired`);
  const second = /: (ak_\w+) is current/.exec(rotated.stdout)![1]!;
  await waitFor(async () => px.logs().includes(`"assertion_key_id":"${second}"`), "the proxy to load the new key");
  const after = await whoami(s.users.alice!.remote);
  expect(after.kid).toBe(second);
  // signed by the retired key, never shown to b: still verifies (published until it expired)
  expect(await present(b, before.token)).toBe(200);

  const withdrawn = await cli(["tool-servers", "assertion-keys", "rotate", "--withdraw-previous"]);
  expect(withdrawn.stdout).toContain(`${second} is withdrawn`);
  const third = /: (ak_\w+) is current/.exec(withdrawn.stdout)![1]!;
  await Bun.sleep(1_000); // b's JWKS cache (0.5 s) runs out
  expect(await present(b, after.token)).toBe(401);
  expect(lastVerdict(b, after.token)?.why).toContain("Unable to find a signing key");
  await waitFor(async () => px.logs().includes(`"assertion_key_id":"${third}"`), "the proxy to load the third key");
  expect((await whoami(s.users.bob!.remote)).kid).toBe(third);
  const jwks = (await (await fetch(`${cp.url}${jwksPath(cp.orgId)}`)).json()) as { keys: { kid: string }[] };
  expect(jwks.keys.map((k) => k.kid).sort()).toEqual([before.kid, third].sort());
  const events = JSON.parse((await cli(["audit", "list", "--kind", "admin", "--json"])).stdout).records.filter((r: { action: string }) => r.action === "assertion_key.rotate");
  expect(events).toHaveLength(2);
});

test("red team: the private key is in clear nowhere but the runtime's memory (bundle, logs, admin API, admin trail, state directory)", async () => {
  // open the key the way only this replica can: with its credential-sync identity
  const replica = /"replica_id":"(rep_\w+)"/.exec(px.logs())![1]!;
  const res = await fetch(`${cp.url}/api/v1/runtime/assertion-key`, { headers: { authorization: `Bearer ${s.runtimeToken}`, "x-svc-replica": replica } });
  const material = (await res.json()) as { sealed_private_jwk: string };
  expect(JSON.stringify(material)).not.toContain('"d"');
  const d = new Decrypter();
  d.addIdentity(readFileSync(join(stateDir, "credential-sync.key"), "utf8").trim());
  const jwk = JSON.parse(await d.decrypt(Buffer.from(material.sealed_private_jwk, "base64"), "text")) as { d: string };
  expect(jwk.d).toMatch(/^[A-Za-z0-9_-]{40,}$/);

  const bundle = await (await fetch(`${cp.url}/api/v1/runtime/policy-bundle?version=2`, { headers: { authorization: `Bearer ${s.runtimeToken}` } })).text();
  expect(bundle).toContain("assertion_key_id");
  const admin = [
    (await api("GET", "/assertion-keys")).text,
    (await api("GET", "/tool-servers/kb")).text,
    (await cli(["audit", "list", "--kind", "admin", "--json"])).stdout,
    (await cli(["tool-servers", "assertion-keys", "list", "--json"])).stdout,
    await (await fetch(`${cp.url}${jwksPath(cp.orgId)}`)).text(),
  ];
  for (const text of [bundle, px.logs(), cp.logs(), ...admin]) expect(text).not.toContain(jwk.d);
  expect(filesHolding(stateDir, jwk.d)).toEqual([]);
  // no assertion in a log either (they are bearer credentials for 60 s)
  const { token } = await whoami(s.users.alice!.remote);
  expect(px.logs()).not.toContain(token.split(".")[2]!);
});

test("the records naming an upstream identity verify (svc audit verify over the export), beside the records without one", async () => {
  const pin = /^ {2}(ed25519:\S+)$/m.exec(cp.bootstrapOutput)![1]!;
  await whoami(s.users.bob!.remote);
  await waitFor(async () => {
    const r = await api("GET", `/audit-records?installation=${s.installationId}&kind=outcome&limit=500`);
    return (r.json.records as any[]).filter((x) => x.upstream_identity).length >= 5;
  }, "the outcome records at the control plane");
  const verified = await svc(cp, ["audit", "verify", "--public-key", pin, "--json"]);
  expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, problems_total: 0 });
  expect(verified.code).toBe(0);
});
