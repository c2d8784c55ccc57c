// Per-user OAuth to an MCP server (issue 32) on the real stack: a control-plane process, the
// proxy as a child process (its MCP gateway), a real OAuth 2.1 authorization server
// (oidc-provider over https: PKCE, resource indicators, rotating refresh tokens, dynamic client
// registration, revocation) and a real MCP resource server (the Python SDK's MCPServer, formerly
// FastMCP, over https, verifying each JWT access token against the JWKS and echoing its
// subject). Consent is given in Chromium at the provider's own sign-in page.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type CallToolResult, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { existsSync, readFileSync } from "node:fs";
import type { Browser } from "playwright-core";
import { type ControlPlaneProcess, freePort, startControlPlane, waitFor } from "../support/controlplane-process.ts";
import { type OAuthNotesServer, type OAuthTestServer, consentAtProvider, startOAuthNotesServer, startOAuthServer } from "../support/oauth-server.ts";
import { testTls } from "../support/tls.ts";
import { addPolicy, adminApi, type Api, must, type ProxyProcess, proxyEnv, type Scenario, setUpScenario, startProxy } from "../../src/proxy/testing/integration.ts";
import { signSession } from "../../src/proxy/mcp/session-jwt.ts";
import { launchBrowser } from "./console-browser.ts";
import { svc } from "./cli-support.ts";

setDefaultTimeout(120_000);
const SECRET = "chatui-secret-for-oauth-tests";
const TTL_SECONDS = 8;

let cp: ControlPlaneProcess;
let api: Api;
let s: Scenario;
let px: ProxyProcess;
let as: OAuthTestServer;
let rs: OAuthNotesServer;
let browser: Browser;
let mcpUrl: string;
let serverId: string;

type Caller = { client: Client; links: string[] };
const callers: Caller[] = [];

/** An MCP client as Open WebUI's is for a user: their session JWT, and it takes URL elicitations. */
async function caller(remoteUserId: string): Promise<Caller> {
  const jwt = signSession({ id: remoteUserId, jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000) }, SECRET);
  const client = new Client({ name: "test", version: "1" }, { capabilities: { elicitation: { url: {} } } });
  const links: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    links.push((req.params as { url: string }).url);
    return { action: "accept" };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: `Bearer ${jwt}` } } }));
  const c = { client, links };
  callers.push(c);
  return c;
}

const text = (r: CallToolResult) => (r.content[0] as { text: string }).text;
const whoami = async (c: Caller) => (await c.client.callTool({ name: "notes.whoami", arguments: {} })) as CallToolResult;

/**
 * Follows a consent link in Chromium and signs in at the provider as `login`; resolves with the
 * page's text at the end. `atProvider`: the link is an authorization server's URL (someone
 * else pressed Continue on svc's page), opened straight away.
 */
async function consent(url: string, login: string, o: { atProvider?: boolean } = {}): Promise<string> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  try {
    return (await consentAtProvider(await context.newPage(), url, { issuer: as.issuer, returnOrigin: cp.url, login, atProvider: o.atProvider })).done;
  } finally {
    await context.close();
  }
}

async function grants(): Promise<any[]> {
  return (await must(api("GET", `/tool-servers/${serverId}/tokens`), "list grants")).grants;
}

beforeAll(async () => {
  const tls = testTls();
  cp = await startControlPlane({ env: { SVC_CP_EXTRA_CA_FILE: tls.caFile } });
  api = adminApi(cp);
  s = await setUpScenario(api, "oauth");
  const rsPort = freePort();
  // Who signs in at the provider has an email there: Alice's as the directory has it, Bob's in capitals (compared case-insensitively).
  const emails = { "alice-at-idp": s.users.alice!.email, "bob-at-idp": s.users.bob!.email.toUpperCase() };
  as = await startOAuthServer({ resource: `https://127.0.0.1:${rsPort}/mcp`, accessTokenTtlSeconds: TTL_SECONDS, emails });
  rs = await startOAuthNotesServer(rsPort, as.issuer);
  browser = await launchBrowser();
  const created = await must(api("POST", "/tool-servers", { name: "notes", workspace: s.workspace, transport: "http", url: rs.url, auth: "oauth" }), "create the OAuth tool server");
  serverId = created.id;
  expect(created.auth).toBe("oauth");
  await must(api("POST", `/tool-servers/${serverId}/assign`, { agent_id: s.agentId }), "assign");
  const mcpPort = freePort();
  px = startProxy(proxyEnv(cp.url, s.runtimeToken, { SVC_PROXY_CA_FILE: tls.caFile, CHATUI_SECRET_KEY: SECRET, SVC_PROXY_MCP_PORT: String(mcpPort) }));
  await px.waitReady();
  mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
});

afterAll(async () => {
  for (const c of callers) await c.client.close().catch(() => {});
  await browser?.close();
  await px?.stop();
  await rs?.stop();
  await as?.stop();
  await cp?.stop();
});

describe("per-user OAuth to an MCP server", () => {
  test("an admin connects the listing grant; the runtime lists the server's tools with it", async () => {
    const link = await must(api("POST", `/tool-servers/${serverId}/tokens/listing`), "listing consent link");
    expect(link.url).toStartWith(`${cp.url}/oauth/tool-servers/consent/`);
    expect(await consent(link.url, "svc-lister")).toContain("Tool connected");
    await waitFor(
      async () => (await must(api("GET", `/tool-servers/${serverId}`), "show")).tools?.some((t: { name: string }) => t.name === "notes.whoami"),
      "the runtime to list notes.whoami",
      30_000,
    );
    await addPolicy(api, s, "*", "tool:notes.whoami");
    const connected = await must(api("GET", "/audit-records?kind=admin&action=tool_server.listing_connect"), "admin trail");
    expect(connected.records).toHaveLength(1);
    expect(JSON.stringify(connected.records[0])).toContain(serverId);
    expect(JSON.stringify(connected)).not.toContain(link.url.split("/consent/")[1]);
    const listing = (await grants()).filter((g) => g.user_id === null);
    expect(listing).toEqual([expect.objectContaining({ server: "notes", subject: "svc-lister", refreshable: true })]);
  });

  test("a user's first call is refused with identity.consent_required; the consent link goes to that user alone", async () => {
    const before = (await px.policy()).policy_revision;
    await waitFor(async () => (await px.policy()).policy_revision >= before, "bundle");
    const alice = await caller(s.users.alice!.remote);
    const bob = await caller(s.users.bob!.remote);
    await waitFor(async () => (await alice.client.listTools()).tools.some((t) => t.name === "notes.whoami"), "notes.whoami offered to alice", 30_000);
    const first = await whoami(alice);
    expect(first.isError).toBe(true);
    expect(text(first)).toStartWith("Refused (identity.consent_required)");
    expect(alice.links).toHaveLength(1);
    expect(alice.links[0]).toStartWith(`${cp.url}/oauth/tool-servers/consent/`);
    expect(text(first)).not.toContain(alice.links[0]!); // the link is not in what the model reads
    expect(bob.links).toHaveLength(0);
    expect(rs.calls().filter((c) => c.tool === "whoami")).toHaveLength(0); // the server never saw the call

    expect(await consent(alice.links[0]!, "alice-at-idp")).toContain("alice-at-idp");
    const second = await whoami(alice);
    expect(second.isError).toBeFalsy();
    expect(text(second)).toBe("subject=alice-at-idp");
  });

  test("a consent link's page names its user, and looking at it does not use it up", async () => {
    const bob = callers[1]!;
    expect(text(await whoami(bob))).toStartWith("Refused (identity.consent_required)");
    expect(bob.links).toHaveLength(1);
    for (let i = 0; i < 2; i++) {
      // a link previewer or prefetcher: GET only, twice
      const shown = await fetch(bob.links[0]!, { redirect: "manual" });
      expect(shown.status).toBe(200);
      const body = await shown.text();
      expect(body).toContain(`Continue only if you are ${s.users.bob!.email}.`);
      expect(body).toContain("If someone sent you this link, close this page.");
      expect(body).toContain("notes");
    }
    // another site cannot send a browser on with the link: the button's POST needs the page's CSRF token
    const forged = await fetch(bob.links[0]!, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "_csrf=forged" });
    expect(forged.status).toBe(403);
    expect(forged.headers.get("location")).toBeNull();
  });

  test("a consent link forwarded to another person: signed in there as Alice, the grant is refused and Bob still needs consent", async () => {
    const bob = callers[1]!;
    const page = await consent(bob.links[0]!, "alice-at-idp");
    expect(page).toContain("Connecting the tool did not work");
    expect(page).toContain(`you signed in at the authorization server as ${s.users.alice!.email}, but this link connects the tool for ${s.users.bob!.email}`);
    expect((await grants()).filter((g) => g.user_id === s.users.bob!.id)).toEqual([]);
    const next = await whoami(bob);
    expect(text(next)).toStartWith("Refused (identity.consent_required)");
    expect(bob.links).toHaveLength(2);
    expect(bob.links[1]).not.toBe(bob.links[0]);
    expect(rs.calls().filter((c) => c.subject === "alice-at-idp" && c.tool === "whoami")).toHaveLength(1); // Alice's own call only
    const trail = await must(api("GET", "/audit-records?kind=admin&action=tool_server.consent_refuse"), "admin trail");
    expect(trail.records).toHaveLength(1);
    expect(trail.records[0].admin).toMatchObject({
      result: "refused",
      severity: "high",
      target: { type: "tool_server", id: serverId },
      after: { user_id: s.users.bob!.id, user_email: s.users.bob!.email, signed_in_email: s.users.alice!.email, subject: "alice-at-idp" },
    });
    expect(JSON.stringify(trail)).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}/);
    expect(cp.logs()).toContain("tool server consent refused");
  });

  test("the authorization URL behind the Continue button, forwarded on its own, binds nothing: only the browser that pressed it can finish", async () => {
    const bob = callers[1]!;
    // Bob presses Continue on his own link's page (his browser: its pre-session cookie and the page's CSRF token)…
    const shown = await fetch(bob.links[1]!, { redirect: "manual" });
    const cookie = shown.headers.getSetCookie().map((c) => c.split(";")[0]!);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await shown.text())![1]!;
    const pressed = await fetch(bob.links[1]!, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookie.join("; ") },
      body: new URLSearchParams({ _csrf: csrf }),
    });
    expect(pressed.status).toBe(303);
    const authorize = pressed.headers.get("location")!;
    expect(authorize).toStartWith(as.issuer);
    expect(new URL(authorize).searchParams.get("scope")!.split(" ")).toEqual(expect.arrayContaining(["openid", "email", "notes"]));
    // …and sends the provider's URL, with the email scopes taken out, to someone whose account there tells no email
    const stripped = new URL(authorize);
    stripped.searchParams.set("scope", "notes");
    const page = await consent(stripped.href, "mallory-at-idp", { atProvider: true });
    expect(page).toContain("this sign-in was started in another browser");
    expect((await grants()).filter((g) => g.user_id === s.users.bob!.id)).toEqual([]);
    expect(text(await whoami(bob))).toStartWith("Refused (identity.consent_required)");
    expect(bob.links).toHaveLength(3);
    expect(rs.calls().some((c) => c.subject === "mallory-at-idp")).toBe(false);
  });

  test("user A's call carries A's token and user B's carries B's", async () => {
    const [alice, bob] = [callers[0]!, callers[1]!];
    const refused = await whoami(bob);
    expect(text(refused)).toStartWith("Refused (identity.consent_required)");
    expect(bob.links.at(-1)).toBe(bob.links.at(-2)!); // the live, unopened link again
    expect(await consent(bob.links.at(-1)!, "bob-at-idp")).toContain("Tool connected");
    expect(text(await whoami(bob))).toBe("subject=bob-at-idp");
    expect(text(await whoami(alice))).toBe("subject=alice-at-idp");
    expect(text(await whoami(bob))).toBe("subject=bob-at-idp");
    const subjects = rs
      .calls()
      .filter((c) => c.tool === "whoami")
      .map((c) => c.subject);
    expect(subjects).toEqual(["alice-at-idp", "bob-at-idp", "alice-at-idp", "bob-at-idp"]);
  });

  test("a consent link, and the provider's answer, work once: replaying them binds nothing", async () => {
    const alice = callers[0]!;
    const replayed = await fetch(alice.links[0]!, { redirect: "manual" });
    expect(replayed.status).toBe(404);
    expect(await replayed.text()).toContain("used already");
    const forged = await fetch(`${cp.url}/oauth/tool-servers/callback?state=forged-state&code=forged-code`, { redirect: "manual" });
    expect(forged.status).toBe(404);
    expect(text(await whoami(alice))).toBe("subject=alice-at-idp");
  });

  test("an expired access token is refreshed without the user", async () => {
    const alice = callers[0]!;
    const before = (await grants()).find((g) => g.user_id === s.users.alice!.id);
    await Bun.sleep((TTL_SECONDS + 1) * 1000);
    const links = alice.links.length;
    expect(text(await whoami(alice))).toBe("subject=alice-at-idp");
    expect(alice.links).toHaveLength(links); // no consent asked
    const after = (await grants()).find((g) => g.user_id === s.users.alice!.id);
    expect(Date.parse(after.refreshed_at)).toBeGreaterThan(Date.parse(before.refreshed_at));
    expect(after.id).toBe(before.id);
  });

  test("tokens list shows subject, server, user and expiry, never a token; an admin's revocation is refused at the next call", async () => {
    const [alice, bob] = [callers[0]!, callers[1]!];
    const res = await api("GET", `/tool-servers/${serverId}/tokens`);
    expect(res.text).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}/);
    const list = res.json.grants;
    expect(list.map((g: any) => [g.user_id, g.subject]).sort()).toEqual(
      [
        [null, "svc-lister"],
        [s.users.alice!.id, "alice-at-idp"],
        [s.users.bob!.id, "bob-at-idp"],
      ].sort(),
    );
    const aliceGrant = list.find((g: any) => g.user_id === s.users.alice!.id);
    const table = await svc(cp, ["tool-servers", "tokens", "list", "notes", "--workspace", s.workspace]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain("alice-at-idp");
    expect(table.stdout).toContain("(listing)");
    expect(table.stdout).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}/);
    const revoked = await svc(cp, ["tool-servers", "tokens", "revoke", "notes", aliceGrant.id, "--workspace", s.workspace]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`Revoked grant ${aliceGrant.id}`);
    // The runtime keeps a handed-out token until its expiry (at most 5 minutes): that hold bounds how soon a revocation bites.
    await waitFor(async () => text(await whoami(alice)).startsWith("Refused (identity.consent_required)"), "alice's next call refused", (TTL_SECONDS + 2) * 1000);
    expect(text(await whoami(bob))).toBe("subject=bob-at-idp");
    const trail = await must(api("GET", "/audit-records?kind=admin&action=tool_server.token_revoke"), "admin trail");
    expect(JSON.stringify(trail)).toContain(aliceGrant.id);
  });

  test("user B cannot get user A's token: not by a forged session, nor through the runtime API for an unlinked user", async () => {
    // A session JWT for alice not signed with Open WebUI's secret: the gateway refuses it.
    const forged = signSession({ id: s.users.alice!.remote, jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000) }, "not-the-secret");
    const c = new Client({ name: "forger", version: "1" });
    await expect(c.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: `Bearer ${forged}` } } }))).rejects.toThrow();
    // The runtime API hands tokens only for linked users of the asking installation, sealed to the asking replica.
    const unlinked = await fetch(`${cp.url}/api/v1/runtime/tool-server-token`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.runtimeToken}`, "content-type": "application/json" },
      body: JSON.stringify({ server: "notes", remote_user_id: "fe-nobody" }),
    });
    expect(unlinked.status).toBe(403);
    const noReplica = await fetch(`${cp.url}/api/v1/runtime/tool-server-token`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.runtimeToken}`, "content-type": "application/json" },
      body: JSON.stringify({ server: "notes", remote_user_id: s.users.bob!.remote }),
    });
    expect(noReplica.status).toBe(422); // sealed to a replica of this installation, named by x-svc-replica
    expect(await noReplica.text()).not.toMatch(/eyJ/);
    // a replica id this installation never bootstrapped (another's, or made up): nothing is sealed to it
    const foreign = await fetch(`${cp.url}/api/v1/runtime/tool-server-token`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.runtimeToken}`, "content-type": "application/json", "x-svc-replica": "rep_01JFOREIGNREPLICA0000000000" },
      body: JSON.stringify({ server: "notes", remote_user_id: s.users.bob!.remote }),
    });
    expect(foreign.status).toBe(403);
    const refused = await foreign.text();
    expect(refused).toContain("is not a replica of this installation");
    expect(refused).not.toMatch(/eyJ|access_token_sealed/);
  });

  test("no token in the logs, the admin API, the audit records or the database", async () => {
    const jwt = /eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}/;
    expect(px.logs()).not.toMatch(jwt);
    expect(cp.logs()).not.toMatch(jwt);
    let records: any;
    // The outcome records of the users' calls name who the call was made as at the server (issue 32 item 4).
    await waitFor(async () => {
      records = await must(api("GET", "/audit-records?limit=500"), "audit records");
      const subjects = new Set(records.records.filter((r: any) => r.upstream_identity).map((r: any) => `${r.upstream_identity.kind}:${r.upstream_identity.subject}`));
      return subjects.has("oauth:alice-at-idp") && subjects.has("oauth:bob-at-idp");
    }, "outcome records naming the OAuth subjects");
    const bobs = records.records.filter((r: any) => r.upstream_identity?.subject === "bob-at-idp");
    expect(bobs.every((r: any) => r.kind === "outcome" && r.subject.remote_user_id === s.users.bob!.remote)).toBe(true);
    expect(JSON.stringify(records)).not.toMatch(jwt);
    // SQLite: the database and its write-ahead log (PostgreSQL runs keep the check above).
    if (!cp.database.startsWith("postgres")) for (const f of [cp.database, `${cp.database}-wal`]) if (existsSync(f)) expect(readFileSync(f).toString("latin1")).not.toMatch(jwt);
  });
});
