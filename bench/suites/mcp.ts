// Issue 13: the time svc's MCP gateway adds to a tools/call. One real upstream (the Python
// SDK's MCPServer over https, test/support/mcp/notes_server.py), called with the official
// TypeScript SDK client twice, interleaved call by call so both see the same machine load:
// directly, and through the proxy's gateway (an in-process daemon with a fake control plane, a
// permit policy, the arguments age-encrypted to one recipient, the decision record fsynced
// before the upstream call and the outcome record after it). `bun bench/mcp-gateway.ts` runs
// one measurement alone; `bun bench/run.ts --only mcp` runs it as a suite.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { generateX25519Identity, identityToRecipient } from "age-encryption";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/proxy/config.ts";
import { startDaemon } from "../../src/proxy/daemon.ts";
import { signSession } from "../../src/proxy/mcp/session-jwt.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "../../src/proxy/testing/bundle.ts";
import { daemonEnv, startFakeControlPlane } from "../../src/proxy/testing/fake-control-plane.ts";
import { startNotesServer, toolServer } from "../../test/support/mcp/servers.ts";
import { testTls } from "../../test/support/tls.ts";
import type { Suite } from "../lib/context.ts";
import { type Metric, metric } from "../lib/report.ts";
import { summarize } from "../lib/stats.ts";

const TOKEN = "svc_rt_bench_mcp";
const SECRET = "bench-chatui-secret";
const quiet = { info() {}, warn() {}, error() {} };

type Summary = ReturnType<typeof summarize>;
export type McpGatewayResult = { calls: number; direct: Summary; svc: Summary; added: { p50: number; p99: number } };

/** Sets up the upstream and the gateway, makes `calls` timed calls each way (after a warm-up), tears down. */
export async function measureMcpGateway(calls: number, warmup = 30): Promise<McpGatewayResult> {
  const notes = await startNotesServer();
  const tls = testTls();
  const recipient = await identityToRecipient(await generateX25519Identity());
  const cp = startFakeControlPlane(
    fakeBundle({
      version: 2,
      tools: [bundleTool("notes.lookup")],
      policies: [{ id: "pol_B", name: "bench", src: "*", dst: "tool:notes.lookup", effect: "permit" }],
      identities: [bundleIdentity("bench")],
      recipients: [{ key_id: "key_B", recipient, kind: "customer" }],
      tool_servers: [toolServer.http(notes.url)],
    }),
    TOKEN,
  );
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-mcp-"));
  const daemon = await startDaemon(loadConfig(daemonEnv(cp, dir, { SVC_PROXY_CA_FILE: tls.caFile, CHATUI_SECRET_KEY: SECRET })), quiet);
  const direct = new Client({ name: "bench", version: "1" });
  const viaSvc = new Client({ name: "bench", version: "1" });
  try {
    while (daemon.status.state !== "ready") await Bun.sleep(20);
    await daemon.mcpSettled();
    const tlsFetch = (async (u: string | URL, init?: RequestInit) => fetch(u, { ...init, tls: { ca: tls.ca } } as RequestInit)) as typeof fetch;
    await direct.connect(new StreamableHTTPClientTransport(new URL(notes.url), { fetch: tlsFetch }));
    const jwt = signSession({ id: "fe-bench", iat: Math.floor(Date.now() / 1000) }, SECRET);
    await viaSvc.connect(new StreamableHTTPClientTransport(new URL(daemon.mcpUrl!), { requestInit: { headers: { authorization: `Bearer ${jwt}` } } }));
    const timed = async (c: Client, name: string, i: number): Promise<number> => {
      const t = performance.now();
      const r = await c.callTool({ name, arguments: { term: `t${i}` } });
      if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
      return performance.now() - t;
    };
    const d: number[] = [];
    const s: number[] = [];
    for (let i = 0; i < warmup + calls; i++) {
      const a = await timed(direct, "lookup", i);
      const b = await timed(viaSvc, "notes.lookup", i);
      if (i >= warmup) {
        d.push(a);
        s.push(b);
      }
    }
    const directS = summarize(d);
    const svcS = summarize(s);
    return { calls, direct: directS, svc: svcS, added: { p50: svcS.p50 - directS.p50, p99: svcS.p99 - directS.p99 } };
  } finally {
    await direct.close().catch(() => {});
    await viaSvc.close().catch(() => {});
    await daemon.shutdown(1000);
    await cp.stop();
    await notes.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const mcp: Suite = {
  name: "mcp",
  async run(ctx) {
    const calls = ctx.quick ? 100 : 300;
    const runs: McpGatewayResult[] = [];
    for (let i = 0; i < ctx.runs; i++) {
      const r = await measureMcpGateway(calls);
      ctx.say(`  MCP tools/call (${calls} each way): direct p50 ${r.direct.p50.toFixed(2)} / p99 ${r.direct.p99.toFixed(2)} ms, via svc p50 ${r.svc.p50.toFixed(2)} / p99 ${r.svc.p99.toFixed(2)} ms`);
      runs.push(r);
    }
    ctx.facts.mcp = { calls, note: "one notes.lookup over https, interleaved direct / through the gateway; audit on (encrypted, fsynced)" };
    const of = (f: (r: McpGatewayResult) => number) => runs.map(f);
    const out: Metric[] = [
      metric(
        "mcp gateway",
        "tools/call p50, upstream directly",
        "ms",
        of((r) => r.direct.p50),
      ),
      metric(
        "mcp gateway",
        "tools/call p50, through the svc gateway",
        "ms",
        of((r) => r.svc.p50),
      ),
      metric(
        "mcp gateway",
        "tools/call p99, upstream directly",
        "ms",
        of((r) => r.direct.p99),
      ),
      metric(
        "mcp gateway",
        "tools/call p99, through the svc gateway",
        "ms",
        of((r) => r.svc.p99),
      ),
      metric(
        "mcp gateway",
        "added by svc, p50",
        "ms",
        of((r) => r.added.p50),
        undefined,
        "same run, interleaved",
      ),
      metric(
        "mcp gateway",
        "added by svc, p99",
        "ms",
        of((r) => r.added.p99),
        undefined,
        "same run, interleaved",
      ),
    ];
    return out;
  },
};
