// The three entry points of a governed call (the chat route, the pack tool routes, the MCP
// gateway) as adapters over one pipeline, in a real daemon with a real MCP server behind the
// gateway (issue 28, "Three hand-built entry points"): MCP tool calls obey the rate limits as
// pack tool calls do; a refusal by a rate limit or a budget names that limit or budget, never
// the policy that permitted the call; the gateway serves and decides MCP tools only.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditRecord } from "../../contract/audit.ts";
import { silentLogger } from "../../log/index.ts";
import { type NotesServer, startNotesServer, toolServer } from "../../../test/support/mcp/servers.ts";
import { testTls } from "../../../test/support/tls.ts";
import { loadConfig } from "../config.ts";
import { type Daemon, startDaemon } from "../daemon.ts";
import { signSession } from "../mcp/session-jwt.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "../testing/bundle.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "../testing/fake-control-plane.ts";

const TOKEN = "svc_rt_entry_points";
const SECRET = "chatui-secret-entry-points";
let cp: FakeControlPlane;
let daemon: Daemon;
let notes: NotesServer;

const jwt = (id: string) => signSession({ id, jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000) }, SECRET);

async function mcpClient(user: string): Promise<Client> {
  const c = new Client({ name: "test", version: "1" });
  await c.connect(new StreamableHTTPClientTransport(new URL(daemon.mcpUrl!), { requestInit: { headers: { authorization: `Bearer ${jwt(user)}` } } }));
  return c;
}

async function call(path: string, body: unknown, user?: string): Promise<Response> {
  const socket = join(daemon.spool.dir, "..", "p.sock");
  return fetch(`http://localhost${path}`, {
    unix: socket,
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...(user ? { "x-svc-user-id": user } : {}) },
    body: JSON.stringify(body),
  } as RequestInit);
}

async function shipped(pred: (r: AuditRecord) => boolean, what: string): Promise<AuditRecord> {
  const end = Date.now() + 20_000;
  for (;;) {
    daemon.shipper.wake();
    const hit = [...cp.audit.values()].find(pred);
    if (hit) return hit;
    if (Date.now() > end) throw new Error(`no shipped audit record: ${what}`);
    await Bun.sleep(50);
  }
}

beforeAll(async () => {
  notes = await startNotesServer();
  cp = startFakeControlPlane(
    fakeBundle({
      tools: ["notes.lookup", "crm.read", "crm.update"].map((n) => bundleTool(n)),
      policies: [
        { id: "pol_notes", name: "notes for all", src: "*", dst: "tool:notes.lookup", effect: "permit" },
        { id: "pol_crm", name: "crm for all", src: "*", dst: "tool:crm.read", effect: "permit" },
        { id: "pol_update", name: "updates for all", src: "*", dst: "tool:crm.update", effect: "permit" },
        { id: "pol_model", name: "models for all", src: "*", dst: "model:invoke", effect: "permit" },
      ],
      identities: [bundleIdentity("alice"), bundleIdentity("bob"), bundleIdentity("carol")],
      model_profile: { id: "mp_1", display_name: "LLM", endpoint: "https://127.0.0.1:9/v1", auth_type: "none", default_model: "m", models: ["m"], api_key_sealed: null },
      tool_servers: [toolServer.http(notes.url)],
    }),
    TOKEN,
  );
  const periodStart = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()));
  cp.budgets = [
    {
      id: "budget_carol",
      name: "carol-daily",
      scope: "user",
      scope_id: "usr_carol",
      group_name: null,
      period: "day",
      unit: "tokens",
      limit: 100,
      spent: 120,
      period_start: periodStart.toISOString(),
      resets_at: new Date(periodStart.getTime() + 86_400_000).toISOString(),
    },
  ];
  const dir = mkdtempSync(join(tmpdir(), "svc-entry-points-"));
  const env = daemonEnv(cp, dir, { SVC_PROXY_CA_FILE: testTls().caFile, CHATUI_SECRET_KEY: SECRET, SVC_PROXY_RATE_LIMITS: "tool=2/min,user=2/min" });
  daemon = await startDaemon(loadConfig(env), silentLogger);
  const end = Date.now() + 60_000;
  while (daemon.status.state !== "ready" && Date.now() < end) await Bun.sleep(50);
  await daemon.mcpSettled();
  await daemon.limits.pollNow();
}, 120_000);

afterAll(async () => {
  await daemon?.shutdown(1000);
  await cp?.stop();
  await notes?.stop();
});

describe("one pipeline behind every entry point", () => {
  test("MCP tool calls obey the rate limits as pack tool calls do: tool=2/min,user=2/min lets 2 of 3 run through either", async () => {
    const alice = await mcpClient("fe-alice");
    const texts: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await alice.callTool({ name: "notes.lookup", arguments: { term: `t${i}` } });
      texts.push(r.isError ? (r.content as { text: string }[])[0]!.text : "ran");
    }
    await alice.close();
    expect(texts.slice(0, 2)).toEqual(["ran", "ran"]);
    expect(texts[2]).toMatch(/^Refused \(svc\.rate_limited\): each tool may make 2 requests a minute; try again in \d+ s$/);
    expect(
      notes
        .calls()
        .filter((c) => c.tool === "lookup")
        .map((c) => c.args.term),
    ).toEqual(["t0", "t1"]);

    const decided = [];
    for (let i = 0; i < 3; i++) decided.push(await (await call("/v1/tools/decide", { tool: "crm.read", user: { id: "fe-bob" }, args: {} })).json());
    expect(decided.map((d) => d.decision)).toEqual(["permit", "permit", "deny"]);
    expect(decided[2].code).toBe("svc.rate_limited");
  });

  test("a rate limit's or a budget's refusal names that limit or budget in its record, not the policy that permitted the call", async () => {
    // bob's third crm.read (the test above) was refused by the tool rule
    const rate = await shipped((r) => r.action === "tool:crm.read" && r.decision === "deny", "the rate-limited decision");
    expect(rate).toMatchObject({ reason: "svc.rate_limited: rate limit tool=2/min", policy_id: null });
    const mcp = await shipped((r) => r.action === "tool:notes.lookup" && r.decision === "deny", "the rate-limited MCP decision");
    expect(mcp).toMatchObject({ reason: "svc.rate_limited: rate limit tool=2/min", policy_id: null, tool_server: "notes" });

    const r = await call("/v1/chat/completions", { messages: [{ role: "user", content: "hi" }] }, "fe-carol");
    expect(r.status).toBe(403);
    const e = (await r.json()).error;
    expect(e).toMatchObject({ type: "refusal", code: "svc.budget_exceeded" });
    expect(e.message).toStartWith('Refused (svc.budget_exceeded): the budget "carol-daily" is used up');
    const budget = await shipped((x) => x.id === e.record_id, "the budget refusal");
    expect(budget).toMatchObject({ decision: "deny", reason: 'svc.budget_exceeded: budget "carol-daily" (budget_carol)', policy_id: null });
  });

  test("the gateway serves and decides MCP tools only: a pack tool's name through it is unknown, neither decided nor audited", async () => {
    const dave = await mcpClient("fe-alice");
    const r = await dave.callTool({ name: "crm.update", arguments: { id: 1 } });
    await dave.close();
    expect(r.isError).toBe(true);
    expect((r.content as { text: string }[])[0]!.text).toStartWith('unknown tool "crm.update"');
    // everything written so far has shipped: none of it is about crm.update
    const end = Date.now() + 10_000;
    while (daemon.spool.depth > 0 && Date.now() < end) {
      daemon.shipper.wake();
      await Bun.sleep(50);
    }
    expect(daemon.spool.depth).toBe(0);
    expect([...cp.audit.values()].some((x) => x.action === "tool:crm.update" || x.tool_server === "crm")).toBe(false);
  });
});
