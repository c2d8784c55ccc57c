// Registration end to end in the daemon: real MCP servers (mcp-server-time over stdio, the
// Python SDK over https), the fake control plane's PUT tools. The MCP tools are listed at
// boot, an unreachable server serves none and is reported, and a change of assigned servers is
// registered again together with the packs' tools (PUT tools replaces the set wholesale).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "../../log/index.ts";
import { type NotesServer, startNotesServer, toolServer } from "../../../test/support/mcp/servers.ts";
import { testTls } from "../../../test/support/tls.ts";
import { loadConfig } from "../config.ts";
import { type Daemon, startDaemon } from "../daemon.ts";
import { formatPolicyStatus } from "../policy-show.ts";
import { bundleTool, fakeBundle } from "../testing/bundle.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "../testing/fake-control-plane.ts";
import { MCP_BOOTED_PATH, MCP_TOOLS_PATH } from "./local-routes.ts";

const TOKEN = "svc_rt_mcp_registration";
const lines: string[] = [];
const log: Logger = { info: (e, f = {}) => void lines.push(JSON.stringify({ e, ...f })), warn: (e, f = {}) => void lines.push(JSON.stringify({ e, ...f })), error: (e, f = {}) => void lines.push(JSON.stringify({ e, ...f })) };

let cp: FakeControlPlane;
let daemon: Daemon;
let notes: NotesServer;
let socket: string;

const bundle = () =>
  fakeBundle({
    version: 2,
    tools: [bundleTool("crm.read")],
    tool_servers: [toolServer.time(), toolServer.http("https://127.0.0.1:1/mcp", { id: "ts_down", name: "down" })],
  });

const call = async (path: string, init: { method?: string; body?: unknown } = {}) =>
  fetch(`http://localhost${path}`, { unix: socket, method: init.method ?? "GET", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, ...(init.body ? { body: JSON.stringify(init.body) } : {}) } as RequestInit);

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 30_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${lines.slice(-20).join("\n")}`);
    await Bun.sleep(50);
  }
}

beforeAll(async () => {
  notes = await startNotesServer();
  cp = startFakeControlPlane(bundle(), TOKEN);
  const dir = mkdtempSync(join(tmpdir(), "svc-mcp-reg-"));
  socket = join(dir, "p.sock");
  const env = daemonEnv(cp, dir, { SVC_PROXY_POLL_INTERVAL: "200ms", SVC_PROXY_HEARTBEAT_INTERVAL: "200ms", SVC_PROXY_CA_FILE: testTls().caFile });
  daemon = await startDaemon(loadConfig(env), log);
  await until(async () => (await fetch("http://localhost/readyz", { unix: socket } as RequestInit).catch(() => null))?.status === 200, "ready");
}, 120_000);

afterAll(async () => {
  await daemon?.shutdown(1000);
  await cp?.stop();
  await notes?.stop();
});

describe("MCP tool registration", () => {
  test("boot listing: the reachable server's tools with their access; the unreachable one serves none and is reported", async () => {
    const doc = (await (await call(MCP_TOOLS_PATH)).json()) as { tools: { name: string; access: string }[]; servers: { name: string; state: string; error: string | null; tool_count: number }[] };
    expect(doc.tools.map((t) => [t.name, t.access])).toEqual([
      ["time.convert_time", "read"],
      ["time.get_current_time", "read"],
    ]);
    expect(doc.servers.find((s) => s.name === "time")).toEqual({ name: "time", state: "ok", error: null, tool_count: 2 });
    const down = doc.servers.find((s) => s.name === "down")!;
    expect(down.state).toBe("unreachable");
    const shown = formatPolicyStatus(await (await call("/v1/policy")).json());
    expect(shown).toContain("mcp time:");
    expect(shown).toMatch(/mcp down:\s+unreachable, serves no tools: https:\/\/127\.0\.0\.1:1/);
    expect(lines.some((l) => l.includes("mcp server unreachable") && l.includes('"server":"down"'))).toBe(true);
    // the heartbeat carries the same per-server status to the control plane (console, readiness)
    const listed = (h: (typeof cp.heartbeats)[number]) => (h.body.tool_servers ?? []).some((t) => t.name === "time" && t.state === "ok");
    await until(() => cp.heartbeats.some(listed), "a heartbeat with the listed servers");
    const beat = cp.heartbeats.find(listed)!.body.tool_servers!;
    expect(beat.find((t) => t.name === "time")).toEqual({ name: "time", state: "ok", error: null, tool_count: 2 });
    expect(beat.find((t) => t.name === "down")).toMatchObject({ state: "unreachable", tool_count: 0 });
  }, 60_000);

  test("after the boot sync, a newly assigned server's tools are registered together with the packs' tools", async () => {
    const mcp = ((await (await call(MCP_TOOLS_PATH)).json()) as { tools: unknown[] }).tools;
    const booted = await call(MCP_BOOTED_PATH, { method: "PUT", body: { packs: { tools: [{ name: "crm.read", access: "read", required_capabilities: [] }] }, mcp } });
    expect(booted.status).toBe(200);
    await Bun.sleep(600); // polls in between: nothing changed, nothing is PUT
    expect(cp.toolPuts).toHaveLength(0);
    cp.setBundle({ tool_servers: [toolServer.time({ allowed_tools: ["get_current_time"] }), toolServer.http(notes.url, { access_overrides: { lookup: "write" } })] });
    await until(() => cp.toolPuts.length > 0, "a PUT tools");
    const names = cp.toolPuts.at(-1)!.tools.map((t) => `${t.name}:${t.access}`);
    expect(names).toEqual(["crm.read:read", "notes.add_note:write", "notes.big:write", "notes.count:write", "notes.lookup:write", "notes.slow:write", "time.get_current_time:read"]);
    // The registered tools arrive in the next bundle: decisions know them (tool_not_registered no more).
    await until(async () => ((await (await call("/v1/policy")).json()) as { tool_count: number }).tool_count === 7, "tool_count 7");
    expect(lines.some((l) => l.includes("mcp tool not served") && l.includes("bad-name"))).toBe(true);
  }, 60_000);
});
