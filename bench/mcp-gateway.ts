// The time svc's MCP gateway adds to a tools/call (issue 13): `bun bench/mcp-gateway.ts [--calls N]`.
// One real upstream (the Python SDK's MCPServer over https, test/support/mcp/notes_server.py),
// called with the official TypeScript SDK client twice, interleaved call by call so both see
// the same machine load: directly, and through `svc proxy serve`'s gateway (in-process daemon,
// fake control plane, a permit policy, arguments age-encrypted to one recipient, the decision
// record fsynced before the upstream call and the outcome record after it). Prints p50/p99 of
// each and of the difference, and writes bench/results/mcp-gateway-<timestamp>.json.
// The machine is shared and noisy: compare the two columns of one run, not runs.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { generateX25519Identity, identityToRecipient } from "age-encryption";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/proxy/config.ts";
import { startDaemon } from "../src/proxy/daemon.ts";
import { signSession } from "../src/proxy/mcp/session-jwt.ts";
import { startFakeControlPlane } from "../src/proxy/testing/fake-control-plane.ts";
import { startNotesServer, toolServer } from "../test/support/mcp/servers.ts";
import { testTls } from "../test/support/tls.ts";
import { summarize } from "./lib/stats.ts";

const argv = process.argv.slice(2);
const CALLS = Number(argv[argv.indexOf("--calls") + 1] ?? 0) || 400;
const WARMUP = 30;
const TOKEN = "svc_rt_bench_mcp";
const SECRET = "bench-chatui-secret";
const quiet = { info() {}, warn() {}, error() {} };

const notes = await startNotesServer();
const tls = testTls();
const recipient = await identityToRecipient(await generateX25519Identity());
const cp = startFakeControlPlane(
  {
    version: 2,
    revision: 1,
    generated_at: new Date().toISOString(),
    organization_id: "org_B",
    workspace_id: "ws_B",
    installation_id: "inst_B",
    agent_id: "agt_B",
    tools: [{ name: "notes.lookup", access: "read", required_capabilities: [] }],
    policies: [{ id: "pol_B", name: "bench", src: "*", dst: "tool:notes.lookup", effect: "permit" }],
    identities: [{ remote_user_id: "fe-bench", user_id: "usr_bench", email: "bench@example.com", groups: [] }],
    model_profile: null,
    recipients: [{ key_id: "key_B", recipient, kind: "customer" }],
    tool_servers: [toolServer.http(notes.url)],
  },
  TOKEN,
);
const dir = mkdtempSync(join(tmpdir(), "svc-bench-mcp-"));
const daemon = await startDaemon(
  loadConfig({ SVC_RUNTIME_TOKEN: TOKEN, SVC_RUNTIME_CONTROL_PLANE_URL: cp.url, SVC_PROXY_STATE_DIR: join(dir, "state"), SVC_RUNTIME_SOCKET_PATH: join(dir, "p.sock"), SVC_PROXY_AUDIT: join(dir, "spool"), SVC_PROXY_POLL_INTERVAL: "1h", SVC_PROXY_HEARTBEAT_INTERVAL: "1h", SVC_PROXY_CA_FILE: tls.caFile, CHATUI_SECRET_KEY: SECRET }),
  quiet,
);
while (daemon.status.state !== "ready") await Bun.sleep(20);
await daemon.mcpSettled();

const tlsFetch = (async (u: string | URL, init?: RequestInit) => fetch(u, { ...init, tls: { ca: tls.ca } } as RequestInit)) as typeof fetch;
const direct = new Client({ name: "bench", version: "1" });
await direct.connect(new StreamableHTTPClientTransport(new URL(notes.url), { fetch: tlsFetch }));
const jwt = signSession({ id: "fe-bench", iat: Math.floor(Date.now() / 1000) }, SECRET);
const viaSvc = new Client({ name: "bench", version: "1" });
await viaSvc.connect(new StreamableHTTPClientTransport(new URL(daemon.mcpUrl!), { requestInit: { headers: { authorization: `Bearer ${jwt}` } } }));

async function timed(c: Client, name: string, i: number): Promise<number> {
  const t = performance.now();
  const r = await c.callTool({ name, arguments: { term: `t${i}` } });
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
  return performance.now() - t;
}

const d: number[] = [];
const s: number[] = [];
for (let i = 0; i < WARMUP + CALLS; i++) {
  const a = await timed(direct, "lookup", i);
  const b = await timed(viaSvc, "notes.lookup", i);
  if (i >= WARMUP) {
    d.push(a);
    s.push(b);
  }
}
const direct_ = summarize(d);
const svc = summarize(s);
const added = { p50: svc.p50 - direct_.p50, p99: svc.p99 - direct_.p99 };
const f = (x: number) => `${x.toFixed(2)} ms`;
console.log(`MCP tools/call, ${CALLS} calls each, interleaved (one notes.lookup over https; audit on, encrypted, fsynced)`);
console.log(`| path | p50 | p99 |\n|---|---|---|`);
console.log(`| upstream directly | ${f(direct_.p50)} | ${f(direct_.p99)} |`);
console.log(`| through the svc gateway | ${f(svc.p50)} | ${f(svc.p99)} |`);
console.log(`| added by svc | ${f(added.p50)} | ${f(added.p99)} |`);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
const out = join(import.meta.dir, "results", `mcp-gateway-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(out, JSON.stringify({ calls: CALLS, direct: direct_, svc, added }, null, 2));
console.log(`written ${out}`);

await direct.close();
await viaSvc.close();
await daemon.shutdown(1000);
await cp.stop();
await notes.stop();
process.exit(0);
