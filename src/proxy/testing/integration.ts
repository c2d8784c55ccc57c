// Helpers for the proxy's cross-process tests (test/integration/proxy-*.test.ts): an admin
// API caller for the real control plane, a scenario set up through it (agent, installation,
// credential, users, groups, links, tools, policies, model profile), the proxy daemon as a
// child process (`svc proxy serve`), and a recording HTTP egress proxy.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { type ControlPlaneProcess, collectOutput, svcCommand, waitFor } from "../../../test/support/controlplane-process.ts";

export type Api = (method: string, path: string, body?: unknown, token?: string) => Promise<{ status: number; json: any; text: string }>;

export function adminApi(cp: ControlPlaneProcess): Api {
  return async (method, path, body, token) => {
    const url = path.startsWith("/api/") ? `${cp.url}${path}` : `${cp.url}/api/v1/organizations/${cp.orgId}${path}`;
    const res = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${token ?? cp.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json: any = null;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: res.status, json, text };
  };
}

export async function must(p: Promise<{ status: number; json: any; text: string }>, what: string): Promise<any> {
  const r = await p;
  if (r.status >= 300) throw new Error(`${what} failed: ${r.status} ${r.text.slice(0, 400)}`);
  return r.json;
}

export type Scenario = {
  workspace: string;
  agentId: string;
  installationId: string;
  runtimeToken: string;
  users: Record<string, { id: string; email: string; remote: string }>;
};

/** alice (group sales) and bob linked; tools crm.read, crm.update registered. */
export async function setUpScenario(api: Api, name = "helpdesk"): Promise<Scenario> {
  const ws = (await must(api("GET", "/workspaces"), "list workspaces")).workspaces[0];
  const agent = await must(api("POST", "/agents", { name: `${name}-agent`, workspace: ws.id }), "create agent");
  const inst = await must(api("POST", "/installations", { platform: "chatui", name, agent_id: agent.id, workspace: ws.id }), "create installation");
  const cred = await must(api("POST", `/installations/${inst.id}/credential`, { rotate: false }), "issue credential");
  const users: Scenario["users"] = {};
  const group = await must(api("POST", "/groups", { name: `sales-${name}` }), "create group");
  for (const who of ["alice", "bob"]) {
    const email = `${who}.${name}@example.com`;
    const u = await must(api("POST", "/users", { email }), `create user ${who}`);
    await must(api("POST", `/users/${u.id}/remote-identities`, { platform: "chatui", remote_user_id: `fe-${who}-${name}` }), `link ${who}`);
    users[who] = { id: u.id, email, remote: `fe-${who}-${name}` };
  }
  const gm = await api("POST", `/groups/${group.id}/members`, { user_id: users.alice!.id });
  if (gm.status >= 300) throw new Error(`add group member failed: ${gm.status} ${gm.text}`);
  await must(
    api(
      "PUT",
      "/api/v1/runtime/tools",
      {
        tools: [
          { name: "crm.read", access: "read", required_capabilities: [] },
          { name: "crm.update", access: "write", required_capabilities: [] },
        ],
      },
      cred.token,
    ),
    "tool sync",
  );
  return { workspace: ws.id, agentId: agent.id, installationId: inst.id, runtimeToken: cred.token, users };
}

export async function addPolicy(api: Api, s: Scenario, src: string, dst: string, effect: "permit" | "deny" = "permit"): Promise<string> {
  const p = await must(api("POST", "/policies", { name: `${effect} ${src} ${dst}`, src, dst, effect, workspace: s.workspace, agent_id: s.agentId }), `create policy ${src} ${dst}`);
  return p.id;
}

export type ProxyProcess = {
  proc: Subprocess;
  socket: string;
  env: Record<string, string>;
  logs(): string;
  call(path: string, init?: { body?: unknown; user?: string | null; method?: string }): Promise<Response>;
  decide(tool: string, user: string | null, args?: Record<string, unknown>): Promise<any>;
  waitReady(): Promise<void>;
  policy(): Promise<any>;
  /**
   * Sends the signal and waits for the exit. With `times` > 1 the later ones follow once the
   * proxy has logged the first (as a terminal's Ctrl-C plus a supervisor's forward, or a
   * second Ctrl-C, reach it while it drains).
   */
  stop(signal?: "SIGTERM" | "SIGINT" | "SIGKILL", times?: number): Promise<number>;
};

export type ProxyDirs = { stateDir: string; socket: string; spool: string };

export function proxyDirs(): ProxyDirs {
  const dir = mkdtempSync(join(tmpdir(), "svc-px-"));
  return { stateDir: join(dir, "state"), socket: join(dir, "p.sock"), spool: join(dir, "spool") };
}

/**
 * One proxy replica's environment: the installation of `token` against the control plane at
 * `cpUrl`, in `dirs` (fresh ones unless given), polling its bundle every 200 ms. `extra` adds
 * to that or overrides it; an undefined value leaves the daemon's own default.
 */
export function proxyEnv(cpUrl: string, token: string, extra: Record<string, string | undefined> = {}, dirs: ProxyDirs = proxyDirs()): Record<string, string> {
  const env: Record<string, string | undefined> = {
    SVC_RUNTIME_TOKEN: token,
    SVC_RUNTIME_CONTROL_PLANE_URL: cpUrl,
    SVC_PROXY_STATE_DIR: dirs.stateDir,
    SVC_RUNTIME_SOCKET_PATH: dirs.socket,
    SVC_PROXY_AUDIT: dirs.spool,
    SVC_PROXY_POLL_INTERVAL: "200ms",
    ...extra,
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

/** The test doubles (model provider, MCP servers) listen on loopback: tests opt in to it (docs/mcp.md "Outbound URLs"). */
export const LOOPBACK_OUTBOUND = "127.0.0.1,::1,localhost";

/** `command`: the svc to run (default this build; the upgrade tests pass an earlier release's binary). */
export function startProxy(env: Record<string, string>, command: string[] = svcCommand()): ProxyProcess {
  const full = { ...process.env, SVC_PROXY_HEARTBEAT_INTERVAL: "1s", SVC_PROXY_ALLOW_PRIVATE_OUTBOUND: LOOPBACK_OUTBOUND, ...env } as Record<string, string>;
  const proc = Bun.spawn([...command, "proxy", "serve"], { env: full, stdout: "pipe", stderr: "pipe" });
  const output = collectOutput(proc);
  const socket = full.SVC_RUNTIME_SOCKET_PATH!;
  const token = full.SVC_RUNTIME_TOKEN!;
  const p: ProxyProcess = {
    proc,
    socket,
    env: full,
    logs: output.text,
    async call(path, init = {}) {
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (init.user) headers["x-svc-user-id"] = init.user;
      if (init.body !== undefined) headers["content-type"] = "application/json";
      return fetch(`http://localhost${path}`, {
        unix: socket,
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers,
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      } as RequestInit);
    },
    async decide(tool, user, args = { q: "x" }) {
      const r = await p.call("/v1/tools/decide", { body: { tool, user: user ? { id: user } : null, args } });
      return r.json();
    },
    async waitReady() {
      await waitFor(
        async () => {
          if (proc.exitCode !== null) throw new Error(`proxy exited ${proc.exitCode}: ${output.text()}`);
          return (await fetch("http://localhost/readyz", { unix: socket } as RequestInit)).status === 200;
        },
        `proxy ready on ${socket}\n${output.text()}`,
        20000,
      );
    },
    async policy() {
      return (await p.call("/v1/policy")).json();
    },
    async stop(signal = "SIGTERM", times = 1) {
      proc.kill(signal);
      if (times > 1) await waitFor(async () => output.text().includes("signal received") || proc.exitCode !== null, "the proxy to log the signal", 10000);
      for (let i = 1; i < times && proc.exitCode === null; i++) proc.kill(signal);
      return await proc.exited;
    },
  };
  return p;
}

/** A plain-HTTP forward proxy that records the absolute URLs it relayed and their statuses. */
export function startEgressProxy() {
  const seen: { method: string; url: string; status: number }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const up = await fetch(req.url, { method: req.method, headers: req.headers, body: req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer(), redirect: "manual" });
      seen.push({ method: req.method, url: req.url, status: up.status });
      return new Response(up.status === 304 || up.status === 204 ? null : await up.arrayBuffer(), { status: up.status, headers: up.headers });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, seen, stop: async () => server.stop(true) };
}

/** Every audit record of an installation, following the cursor. */
export async function auditRecordsOf(api: Api, installationId: string): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  for (;;) {
    const q = new URLSearchParams({ installation: installationId, limit: "500" });
    if (cursor) q.set("cursor", cursor);
    const page = await must(api("GET", `/audit-records?${q}`), "search audit records");
    out.push(...page.records);
    cursor = page.next_cursor;
    if (!cursor) return out;
  }
}

export { waitFor };
