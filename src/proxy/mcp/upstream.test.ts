// Against real MCP servers: the Python SDK's MCPServer over https, mcp-server-time and
// mcp-server-git over stdio (scripts/mcp-servers-venv.sh).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rootCertificates } from "node:tls";
import { createLogger } from "../../log/index.ts";
import { type NotesServer, startNotesServer, tempGitRepo, toolServer } from "../../../test/support/mcp/servers.ts";
import { testTls } from "../../../test/support/tls.ts";
import { McpServers } from "./servers.ts";
import { Upstream } from "./upstream.ts";
import { alive } from "../../../test/support/processes.ts";

const log = createLogger("test", () => {});
const ca = () => [...rootCertificates, testTls().ca];
const noSecrets = { unseal: async () => "{}" };
let notes: NotesServer;

beforeAll(async () => {
  notes = await startNotesServer({ requireHeader: "x-api-key=s3cret" });
}, 120_000);
afterAll(async () => {
  await notes?.stop();
});

describe("Upstream over Streamable HTTP (https)", () => {
  test("lists tools with their annotations and calls one, sending the secret header", async () => {
    const u = new Upstream({ server: toolServer.http(notes.url), secrets: { "x-api-key": "s3cret" }, ca: ca(), log });
    await u.refresh();
    expect(u.error).toBeNull();
    expect(u.state).toBe("ok");
    expect(u.tools.map((t) => t.name).sort()).toEqual(["__proto__", "add_note", "bad-name", "big", "constructor", "count", "files.read", "lookup", "slow", "toString", "valueOf"]);
    expect(u.tools.find((t) => t.name === "lookup")!.annotations?.readOnlyHint).toBe(true);
    const r = await u.call("lookup", { term: "svc" });
    expect(JSON.stringify(r.content)).toContain("note about svc");
    expect(notes.calls().at(-1)).toEqual({ tool: "lookup", args: { term: "svc" } });
    await u.close();
  });

  test("without the secret the server is unreachable, and says why", async () => {
    const u = new Upstream({ server: toolServer.http(notes.url), secrets: {}, ca: ca(), log });
    await u.refresh();
    expect(u.state).toBe("unreachable");
    expect(u.error).toContain("127.0.0.1");
    await expect(u.call("lookup", { term: "x" })).rejects.toThrow(/unreachable/);
    await u.close();
  });

  test("a timeout, a cancellation and an oversized result are errors naming their cause", async () => {
    const u = new Upstream({ server: toolServer.http(notes.url), secrets: { "x-api-key": "s3cret" }, ca: ca(), log, callTimeoutMs: 500, resultLimitBytes: 64 * 1024 });
    await u.refresh();
    await expect(u.call("slow", { seconds: 5 })).rejects.toMatchObject({ code: "timeout" });
    const ac = new AbortController();
    const p = u.call("slow", { seconds: 0.4 }, ac.signal);
    setTimeout(() => ac.abort(), 100);
    await expect(p).rejects.toMatchObject({ code: "cancelled" });
    await expect(u.call("big", { kib: 100 })).rejects.toThrow(/MCP_RESULT_LIMIT_BYTES/);
    expect((await u.call("big", { kib: 1 })).isError).toBeFalsy();
    await u.close();
  });
});

describe("Upstream over stdio (PyPI servers)", () => {
  test("mcp-server-time: lists and calls get_current_time", async () => {
    const u = new Upstream({ server: toolServer.time(), secrets: {}, ca: null, log });
    await u.refresh();
    expect(u.error).toBeNull();
    expect(u.tools.map((t) => t.name)).toContain("get_current_time");
    const r = await u.call("get_current_time", { timezone: "UTC" });
    expect(JSON.stringify(r.content)).toContain("UTC");
    await u.close();
  }, 60_000);

  test("mcp-server-git on a temporary repository: git_log sees the commit", async () => {
    const repo = tempGitRepo();
    const u = new Upstream({ server: toolServer.git(repo), secrets: {}, ca: null, log });
    await u.refresh();
    expect(u.error).toBeNull();
    const r = await u.call("git_log", { repo_path: repo });
    expect(JSON.stringify(r.content)).toContain("first commit");
    await u.close();
  }, 60_000);

  test("a stdio server that dies is unreachable, then restarted with its tools back", async () => {
    let changes = 0;
    const u = new Upstream({ server: toolServer.time(), secrets: {}, ca: null, log, onChange: () => changes++ });
    await u.refresh();
    expect(u.state).toBe("ok");
    const pid = (u as unknown as { client: { transport: { pid: number } } }).client.transport.pid;
    process.kill(pid, "SIGKILL");
    const deadline = Date.now() + 20_000;
    while (u.state === "ok" && Date.now() < deadline) await Bun.sleep(20);
    expect(u.state).toBe("unreachable");
    await expect(u.call("get_current_time", { timezone: "UTC" })).rejects.toMatchObject({ code: "unreachable" });
    while (u.state !== "ok" && Date.now() < deadline) await Bun.sleep(50);
    expect(u.state).toBe("ok");
    expect(changes).toBe(2);
    expect((await u.call("get_current_time", { timezone: "UTC" })).isError).toBeFalsy();
    await u.close();
  }, 60_000);
});

describe("Upstream over stdio: a hung server", () => {
  test("a stopped (SIGSTOP) server fails its ping: killed, calls fail fast as unreachable, restarted with its tools back", async () => {
    const warnings: { e: string; f: Record<string, unknown> }[] = [];
    const seen = { info() {}, warn: (e: string, f = {}) => void warnings.push({ e, f }), error() {} };
    let changes = 0;
    const u = new Upstream({ server: toolServer.time(), secrets: {}, ca: null, log: seen, pingIntervalMs: 100, pingTimeoutMs: 2000, onChange: () => changes++ });
    await u.refresh();
    expect(u.state).toBe("ok");
    const client = (u as unknown as { client: { transport: { pid: number }; ping: (o: unknown) => Promise<unknown> } }).client;
    const pid = client.transport.pid;
    // idle and answering: pinged, and left alone
    const ping = client.ping.bind(client);
    let answered = 0;
    client.ping = async (o) => ping(o).then((r) => (answered++, r));
    const deadline = Date.now() + 30_000;
    while (answered < 3 && Date.now() < deadline) await Bun.sleep(20);
    expect(answered).toBeGreaterThanOrEqual(3);
    expect(u.state).toBe("ok");
    expect(changes).toBe(0);
    process.kill(pid, "SIGSTOP"); // alive, its pipes open, but it answers nothing
    while (u.state === "ok" && Date.now() < deadline) await Bun.sleep(20);
    expect(u.state).toBe("unreachable");
    expect(u.error).toContain("stopped answering (no answer to ping within 2 s); it was killed");
    expect(warnings.map((w) => [w.e, w.f.server])).toContainEqual(["mcp server unreachable", "time"]);
    // the same error a crashed server gives, at once (not after the call timeout)
    await expect(u.call("get_current_time", { timezone: "UTC" })).rejects.toMatchObject({ code: "unreachable" });
    while (alive(pid) && Date.now() < deadline) await Bun.sleep(20);
    expect(alive(pid)).toBe(false);
    while (u.state !== "ok" && Date.now() < deadline) await Bun.sleep(50);
    expect(u.state).toBe("ok");
    expect(changes).toBe(2); // gone, then back
    expect((u as unknown as { client: { transport: { pid: number } } }).client.transport.pid).not.toBe(pid);
    expect((await u.call("get_current_time", { timezone: "UTC" })).isError).toBeFalsy();
    await u.close();
  }, 60_000);
});

describe("McpServers", () => {
  test("serves the reachable servers' tools, reports an unreachable one, and follows the bundle", async () => {
    const s = new McpServers({ credentials: noSecrets, ca: ca(), log });
    await s.sync([toolServer.time(), toolServer.http("https://127.0.0.1:1/mcp", { name: "down" })]);
    expect(s.entries().map((e) => e.name)).toEqual(["time.convert_time", "time.get_current_time"]);
    expect(s.entries().every((e) => e.access === "read")).toBe(true);
    const st = s.status();
    expect(st.find((x) => x.name === "time")).toEqual({ name: "time", state: "ok", error: null, tool_count: 2 });
    expect(st.find((x) => x.name === "down")!.state).toBe("unreachable");
    await s.sync([toolServer.time({ allowed_tools: ["get_current_time"] })]);
    expect(s.entries().map((e) => e.name)).toEqual(["time.get_current_time"]);
    expect(s.status().map((x) => x.name)).toEqual(["time"]);
    await s.close();
  }, 60_000);
});
