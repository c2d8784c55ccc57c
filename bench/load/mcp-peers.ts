// The MCP peers of the stdio suite (issue 34, bench/suites/mcp-stdio.ts), each installed by
// bench/setup-peers.sh into its own venv under $SVC_BENCH_PEERS: where they live and how
// ContextForge is brought up, which takes more than a spawn.
//
// IBM ContextForge (mcp-contextforge-gateway 1.0.7, PyPI; 1.1.0 needs Python >= 3.12) speaks
// only SSE and Streamable HTTP to its upstreams, so a stdio server needs a bridge in front of it.
// Its own, `python -m mcpgateway.translate --stdio "<cmd>"` (its README's way), returns other
// sessions' answers under concurrency: it fans every line the stdio server writes out to all its
// sessions and does not rewrite JSON-RPC ids, which every session numbers from 0 (measured: 8
// sessions × 10 echo calls straight at it, 69 of 80 answers were another call's over Streamable
// HTTP, 70 over SSE; through the gateway, wrong answers from the first c=8 block on, with 8
// sessions and with one). So the bridge here is mcp-proxy 0.13 (a second instance with its own
// server; 80 of 80 right through the gateway at c=8), the other peer of the suite: what
// ContextForge adds beyond the bare bridge is its path minus mcp-proxy's, in the same run.
// The bridge is registered as a gateway through the admin REST API, its `echo` tool put in a
// virtual server, the client on /servers/<id>/mcp with the platform admin's bearer from
// `python -m mcpgateway.utils.create_jwt_token` (the README's way; /auth/email/login answers 403
// "Password change required" for the bootstrapped admin). The gateway is `mcpgateway` as shipped
// (one uvicorn worker, SQLite, no Redis), with only what it needs to start and to be measured:
//   JWT_SECRET_KEY, AUTH_ENCRYPTION_SECRET, PLATFORM_ADMIN_PASSWORD  generated per run (it
//       refuses placeholders); DATABASE_URL  SQLite in a temporary directory of the run;
//   MCPGATEWAY_ADMIN_API_ENABLED=true  the REST API that registers the gateway and server;
//   MCPGATEWAY_UI_ENABLED=false  no admin console; SSRF_ALLOW_LOCALHOST=true  the bridge is on
//       loopback; LOG_LEVEL=ERROR;
//   RATE_LIMITING_ENABLED=false  its default quota (100 MCP requests a minute per user, 20
//       burst) would refuse the bench's calls, not slow them; svc runs without rate limits too.
// Everything else keeps its default: plugins off, observability off, its auth and tool-lookup
// caches on, upstream MCP sessions reused per client session, the periodic gateway health check.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const PEERS = process.env.SVC_BENCH_PEERS ?? "/var/cache/svc/bench-peers";
export const MCP_PROXY_BIN = join(PEERS, "mcp-proxy-0.13.0/bin/mcp-proxy");
export const CONTEXTFORGE_VERSION = "1.0.7";
const CF_VENV = join(PEERS, `contextforge-${CONTEXTFORGE_VERSION}`);
export const CONTEXTFORGE_BIN = join(CF_VENV, "bin/mcpgateway");
/** ContextForge's start-up (database migrations, RBAC bootstrap) took 27-40 s at load 9 here. */
const CF_START_S = 240;

export const freePort = () => {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const p = s.port;
  s.stop(true);
  return p;
};

/** Polls `url` until anything answers; throws when `proc` exits first or after `seconds`. */
export async function waitHttp(url: string, proc: Bun.Subprocess, what: string, seconds = 30): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${what} exited with ${proc.exitCode}`);
    const up = await fetch(url, { method: "GET", signal: AbortSignal.timeout(1000) }).then(
      () => true,
      () => false,
    );
    if (up) return;
    if (Date.now() > deadline) throw new Error(`${what} did not answer within ${seconds} s`);
    await Bun.sleep(200);
  }
}

/** `pid`: the gateway's process (not its bridge's). */
export type ContextForge = { url: string; headers: Record<string, string>; tool: string; pid: number; close(): Promise<void> };

const tail = (file: string) => {
  try {
    return readFileSync(file, "utf8").trim().split("\n").slice(-5).join(" | ").slice(-1200);
  } catch {
    return "";
  }
};

/** Starts a bridge (mcp-proxy) on `server` (a stdio command) and the gateway, registers the bridge, returns the client's endpoint. */
export async function startContextForge(server: string[]): Promise<ContextForge> {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-contextforge-"));
  const procs: Bun.Subprocess[] = [];
  const close = async () => {
    for (const p of procs) p.kill();
    await Promise.race([Promise.all(procs.map(async (p) => p.exited)), Bun.sleep(15_000)]);
    for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  const secret = () => randomBytes(32).toString("hex");
  const email = "admin@example.com";
  const password = `Bench-${randomBytes(12).toString("hex")}!`;
  const env = {
    ...process.env,
    JWT_SECRET_KEY: secret(),
    AUTH_ENCRYPTION_SECRET: secret(),
    PLATFORM_ADMIN_EMAIL: email,
    PLATFORM_ADMIN_PASSWORD: password,
    DATABASE_URL: `sqlite:///${join(dir, "mcp.db")}`,
    MCPGATEWAY_ADMIN_API_ENABLED: "true",
    MCPGATEWAY_UI_ENABLED: "false",
    SSRF_ALLOW_LOCALHOST: "true",
    RATE_LIMITING_ENABLED: "false",
    LOG_LEVEL: "ERROR",
  } as Record<string, string>;
  try {
    const bridgePort = freePort();
    const bridge = Bun.spawn([MCP_PROXY_BIN, "--port", String(bridgePort), "--log-level", "WARNING", ...server], { stdout: "ignore", stderr: "ignore" });
    procs.push(bridge);
    const port = freePort();
    const gatewayLog = join(dir, "gateway.log");
    const gateway = Bun.spawn([CONTEXTFORGE_BIN, "--host", "127.0.0.1", "--port", String(port)], { cwd: dir, env, stdout: Bun.file(gatewayLog), stderr: Bun.file(gatewayLog) });
    procs.push(gateway);
    const base = `http://127.0.0.1:${port}`;
    await waitHttp(`http://127.0.0.1:${bridgePort}/status`, bridge, "mcp-proxy (ContextForge's bridge)");
    await waitHttp(`${base}/health`, gateway, "mcpgateway", CF_START_S).catch((e: Error) => {
      throw new Error(`${e.message}: ${tail(gatewayLog)}`);
    });

    const api = async <T>(path: string, body?: unknown, token?: string): Promise<T> => {
      const res = await fetch(`${base}${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`ContextForge ${path}: ${res.status} ${text.slice(0, 300)}`);
      return JSON.parse(text) as T;
    };
    const minted = Bun.spawnSync([join(CF_VENV, "bin/python"), "-m", "mcpgateway.utils.create_jwt_token", "--username", email, "--exp", "120"], { cwd: dir, env, stdout: "pipe", stderr: "pipe" });
    const token = minted.stdout.toString().trim().split("\n").at(-1) ?? "";
    if (minted.exitCode !== 0 || !token) throw new Error(`create_jwt_token exited ${minted.exitCode}: ${minted.stderr.toString().slice(-300)}`);
    const gw = await api<{ id: string }>("/gateways", { name: "everything", url: `http://127.0.0.1:${bridgePort}/mcp`, transport: "STREAMABLEHTTP" }, token);
    const tools = await api<{ id: string; name: string; originalName: string; gatewayId: string }[]>("/tools", undefined, token);
    const echo = tools.find((t) => t.gatewayId === gw.id && t.originalName === "echo");
    if (!echo) throw new Error(`ContextForge listed no echo tool of the registered gateway: ${tools.map((t) => t.name).join(", ")}`);
    const vs = await api<{ id: string }>("/servers", { server: { name: "bench-echo", description: "server-everything's echo", associated_tools: [echo.id] } }, token);
    return { url: `${base}/servers/${vs.id}/mcp`, headers: { authorization: `Bearer ${token}` }, tool: echo.name, pid: gateway.pid, close };
  } catch (e) {
    await close();
    throw e;
  }
}
