// runSupervisor in this process with stand-ins written by the test: a proxy daemon (a Bun
// script serving /readyz on the unix socket), a front end with an admin already signed up,
// and a "python" whose seed succeeds, fails or hangs. No Open WebUI, no UID switch (the
// preflight gets UID 10001 as a parameter; as root the state directory is writable).
import { afterAll, describe, expect, test } from "bun:test";
import { EventEmitter } from "node:events";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "../log/index.ts";
import type { Child } from "./children.ts";
import { CONTAINER_UID } from "./preflight.ts";
import { proxyEnv, StartFailure, runSupervisor } from "./run.ts";
import { lines, waitUntil } from "./testing.ts";
import { alive } from "../../test/support/processes.ts";

const root = mkdtempSync(join(tmpdir(), "svc-run-unit-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const PROXY = `
const socket = process.env.SVC_RUNTIME_SOCKET_PATH;
require("node:fs").rmSync(socket, { force: true });
const server = Bun.serve({ unix: socket, fetch: () => Response.json({ state: "ready", tools: [], servers: [] }) });
process.on("SIGTERM", () => { server.stop(true); process.exit(0); });
`;
const FRONTEND = `
Bun.serve({ hostname: "127.0.0.1", port: Number(process.argv[2]), fetch: () => Response.json({ name: "stand-in" }) });
process.on("SIGTERM", () => process.exit(0));
`;
// argv: -m svc_chatui.boot --seed (the manifest export runs on the real python3)
const PYTHON = `#!/bin/sh
case "$*" in *--export-manifest*) exec python3 "$@" ;; esac
echo "$$" >> "$SEED_PIDS"
case "$FAKE_SEED" in
  ok) echo "warning: a pack warning" >&2; echo '{"owner":"u-admin","items":{"svc":"installed","svc_guard":"installed","acme_crm":"installed"}}' ;;
  fail) echo "Traceback (most recent call last):" >&2; echo "seed failed: OperationalError: database is locked" >&2; exit 4 ;;
  hang) exec sleep 600 ;;
esac
`;
for (const [name, text] of [
  ["proxy.ts", PROXY],
  ["frontend.ts", FRONTEND],
  ["python", PYTHON],
] as const)
  writeFileSync(join(root, name), text);
chmodSync(join(root, "python"), 0o755);

function freePort(): number {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port!;
  void s.stop(true);
  return port;
}

function capture(): Logger & { lines: string[] } {
  const out: string[] = [];
  const push = (e: string) => void out.push(e);
  return { lines: out, info: push, warn: push, error: push };
}

let n = 0;
function start(seed: "ok" | "fail" | "hang", over: { seedTimeoutMs?: number; syncSleep?: (ms: number) => Promise<void>; env?: Record<string, string> } = {}) {
  const dir = join(root, `case-${n++}`);
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    SVC_STATE_DIR: join(dir, "state"),
    CHATUI_SECRET_KEY: "s3cret",
    SVC_RUNTIME_TOKEN: "svc_rt_1",
    SVC_RUNTIME_CONTROL_PLANE_URL: "http://127.0.0.1:9",
    SVC_CHATUI_HOST: "127.0.0.1",
    SVC_CHATUI_PORT: String(freePort()),
    SVC_CHATUI_COMMAND: `${process.execPath} ${join(root, "frontend.ts")} {port}`,
    SVC_CHATUI_PYTHON: join(root, "python"),
    FAKE_SEED: seed,
    SEED_PIDS: join(root, `seed-pids-${n}`),
    PYTHONPATH: join(import.meta.dir, "../../examples"),
    ...over.env,
  };
  const log = capture();
  const signals = new EventEmitter();
  const children: Child[] = [];
  const done = runSupervisor(env, CONTAINER_UID, {
    log,
    signals,
    proxyCommand: [process.execPath, join(root, "proxy.ts")],
    drainGraceMs: 10_000,
    stopGraceMs: 10_000,
    onChild: (c) => children.push(c),
    seedTimeoutMs: over.seedTimeoutMs,
    syncSleep: over.syncSleep,
  });
  return { done, log, signals, children, seedPids: () => lines(env.SEED_PIDS!).map(Number), alive };
}

describe("svc run, tool sync (spec §3: 5 attempts over about 15 s, then the container exits)", () => {
  test("a control plane that keeps failing: 5 attempts with 1+2+4+8 s between them, then the refusal; the front end never starts", async () => {
    let puts = 0;
    const cp = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => (puts++, Response.json({ detail: "maintenance" }, { status: 503 })) });
    const waits: number[] = [];
    try {
      const r = start("ok", { env: { SVC_CHATUI_TOOL_PACKS: "acme_tools", SVC_RUNTIME_CONTROL_PLANE_URL: `http://127.0.0.1:${cp.port}` }, syncSleep: async (ms) => void waits.push(ms) });
      let error: unknown;
      await r.done.catch((e) => (error = e));
      expect(error).toBeInstanceOf(StartFailure);
      expect((error as Error).message).toBe("registering the packs' tools failed; refusing to start: HTTP 503: maintenance (5 attempts)");
      expect(puts).toBe(5);
      expect(waits).toEqual([1000, 2000, 4000, 8000]);
      expect(r.children.map((c) => c.name)).toEqual(["proxy"]);
      expect(r.alive(r.children[0]!.pid)).toBe(false);
    } finally {
      void cp.stop(true);
    }
  });
});

describe("svc run, supervised seeding", () => {
  test("the seed runs once the first admin exists; SIGTERM then stops the front end and the proxy", async () => {
    const r = start("ok");
    await waitUntil(() => r.log.lines.some((l) => l.startsWith("svc functions seeded")), "the seed");
    expect(r.log.lines).toContain('svc functions seeded: Pipe "svc" and guard "svc_guard" active, 1 toolkit tool(s) (acme_crm)');
    expect(r.log.lines).toContain("seed: warning: a pack warning");
    expect(r.children.map((c) => c.name)).toEqual(["proxy", "front end", "seed"]);
    r.signals.emit("SIGTERM");
    expect(await r.done).toBe(0);
    expect(r.children.every((c) => c.hasExited())).toBe(true);
  });

  test("a failing seed stops the container with the seed's last line, and no child is left", async () => {
    const r = start("fail");
    let error: unknown;
    await r.done.catch((e) => (error = e));
    expect(error).toBeInstanceOf(StartFailure);
    expect((error as Error).message).toBe("seeding the front end failed (exit 4): seed failed: OperationalError: database is locked; the container stops");
    expect(r.children.map((c) => c.name)).toEqual(["proxy", "front end", "seed"]);
    for (const c of r.children) expect(r.alive(c.pid)).toBe(false);
  });

  test("SIGTERM while the seed runs stops the seed too (no orphan)", async () => {
    const r = start("hang");
    await waitUntil(() => r.seedPids().length > 0, "the seed to start");
    r.signals.emit("SIGTERM");
    expect(await r.done).toBe(0);
    expect(r.children.map((c) => c.name)).toEqual(["proxy", "front end", "seed"]);
    for (const pid of [...r.children.map((c) => c.pid), ...r.seedPids()]) expect(r.alive(pid)).toBe(false);
    // the seed stopped by the signal is not reported as a failed seed
    expect(r.log.lines.filter((l) => l.startsWith("seed"))).toEqual([]);
    expect(r.log.lines.at(-1)).toBe("stopped (SIGTERM)");
  });

  test("the front end dying while the seed runs stops the seed and the proxy, exit code 1", async () => {
    const r = start("hang");
    await waitUntil(() => r.seedPids().length > 0, "the seed to start");
    process.kill(r.children.find((c) => c.name === "front end")!.pid, "SIGKILL");
    expect(await r.done).toBe(1);
    expect(r.log.lines).toContain("front end exited (code 137); stopping");
    for (const pid of [...r.children.map((c) => c.pid), ...r.seedPids()]) expect(r.alive(pid)).toBe(false);
  });

  test("a seed that never finishes stops the container", async () => {
    const r = start("hang", { seedTimeoutMs: 300 });
    let error: unknown;
    await r.done.catch((e) => (error = e));
    expect((error as Error).message).toStartWith("seeding the front end failed: no result within 0.3 s");
    for (const pid of [...r.children.map((c) => c.pid), ...r.seedPids()]) expect(r.alive(pid)).toBe(false);
  });
});

describe("proxyEnv", () => {
  test("SVC_PROXY_CA_FILE goes to Bun's default store through NODE_EXTRA_CA_CERTS, never over the operator's own", () => {
    expect(proxyEnv({ SVC_PROXY_CA_FILE: "/etc/ca.pem", PATH: "/bin" }, { SVC_STATE_DIR: "/s" })).toEqual({
      SVC_PROXY_CA_FILE: "/etc/ca.pem",
      NODE_EXTRA_CA_CERTS: "/etc/ca.pem",
      PATH: "/bin",
      SVC_STATE_DIR: "/s",
    });
    expect(proxyEnv({ SVC_PROXY_CA_FILE: "/etc/ca.pem", NODE_EXTRA_CA_CERTS: "/etc/corp.pem" }, {}).NODE_EXTRA_CA_CERTS).toBe("/etc/corp.pem");
    expect(proxyEnv({ PATH: "/bin" }, {})).toEqual({ PATH: "/bin" });
  });
});
