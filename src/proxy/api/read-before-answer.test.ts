// Read before answering (issue 28): a client that sends `Connection: close` and its body in a
// separate write gets the proxy's answer (the 503 while it cannot decide, a 401, 404 or 405),
// never a broken pipe. A raw socket client does exactly that against a real daemon: headers,
// a pause, then the body, then it reads what comes back. Before, the proxy answered and closed
// before the body arrived, and the body's write failed (52 of 100 in issue 28's measurement).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../log/index.ts";
import { loadConfig } from "../config.ts";
import { type Daemon, startDaemon } from "../daemon.ts";
import { fakeBundle } from "../testing/bundle.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "../testing/fake-control-plane.ts";

const TOKEN = "svc_rt_read_first";
let cp: FakeControlPlane;
let daemon: Daemon;
let socket: string;

type Exchange = { status: number | null; writeError: string | null };

/** Headers with `Connection: close`, a pause, then the body in a write of its own; the answer's status line. */
async function exchange(path: string, body: string, o: { token?: boolean; pauseMs?: number; tcp?: URL } = {}): Promise<Exchange> {
  const head = [
    `POST ${path} HTTP/1.1`,
    "Host: localhost",
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "Connection: close",
    ...(o.token === false ? [] : [`Authorization: Bearer ${TOKEN}`]),
    "",
    "",
  ].join("\r\n");
  return new Promise((resolve) => {
    const s = o.tcp ? connect({ host: o.tcp.hostname, port: Number(o.tcp.port), allowHalfOpen: true }) : connect({ path: socket, allowHalfOpen: true });
    let data = "";
    let bodySent = false;
    let writeError: string | null = null;
    const failed = (why: string) => void (writeError ??= why);
    s.on("data", (d) => (data += d.toString("latin1")));
    s.on("error", (e) => failed((e as NodeJS.ErrnoException).code ?? e.message));
    // The answer's end before the body went out: a client that writes its body now gets EPIPE.
    s.on("end", () => {
      if (bodySent) return void s.end();
      failed("closed before the body was sent");
      s.destroy();
    });
    s.on("close", () => {
      const m = /^HTTP\/1\.1 (\d{3})/.exec(data);
      resolve({ status: m ? Number(m[1]) : null, writeError });
    });
    s.write(head, () => {
      setTimeout(() => {
        if (s.destroyed) return failed("closed before the body was sent");
        s.write(body, (e) => {
          if (e) failed((e as NodeJS.ErrnoException).code ?? e.message);
          bodySent = true;
        });
      }, o.pauseMs ?? 5);
    });
  });
}

beforeAll(async () => {
  // A control plane that cannot answer: the proxy stays `starting` and refuses with 503.
  cp = startFakeControlPlane(fakeBundle(), TOKEN);
  cp.down = true;
  const dir = mkdtempSync(join(tmpdir(), "svc-read-first-"));
  const env = daemonEnv(cp, dir, { CHATUI_SECRET_KEY: "read-first-secret" });
  socket = env.SVC_RUNTIME_SOCKET_PATH!;
  daemon = await startDaemon(loadConfig(env), silentLogger);
}, 60_000);

afterAll(async () => {
  await daemon?.shutdown(500);
  await cp?.stop();
});

describe("the proxy reads the body before it answers", () => {
  test("100 of 100 decide calls with Connection: close and the body written apart get the 503, none a broken pipe", async () => {
    expect(daemon.status.state).not.toBe("ready");
    const body = JSON.stringify({ tool: "crm.read", user: { id: "fe-alice" }, args: { q: "x".repeat(2000) } });
    const results: Exchange[] = [];
    for (let i = 0; i < 100; i++) results.push(await exchange("/v1/tools/decide", body));
    expect(results.filter((r) => r.status === 503 && r.writeError === null)).toHaveLength(100);
  });

  test("the chat route, an answer before routing (401 without the token, 404, 405), the outcome route and the MCP gateway: the answer, never a broken pipe", async () => {
    const chat = JSON.stringify({ model: "m", messages: [{ role: "user", content: "y".repeat(5000) }] });
    for (let i = 0; i < 20; i++) {
      expect(await exchange("/v1/chat/completions", chat)).toEqual({ status: 503, writeError: null });
      expect(await exchange("/v1/tools/outcome", JSON.stringify({ record_id: "rec_x", outcome: "ok" }))).toEqual({ status: 503, writeError: null });
      expect(await exchange("/v1/tools/decide", chat, { token: false })).toEqual({ status: 401, writeError: null });
      expect(await exchange("/v1/nothing", chat)).toEqual({ status: 404, writeError: null });
      expect(await exchange("/v1/models", chat)).toEqual({ status: 405, writeError: null });
      // the MCP gateway (loopback TCP): no session JWT, an unknown path
      const gateway = new URL(daemon.mcpUrl!);
      expect(await exchange("/mcp", chat, { tcp: gateway, token: false })).toEqual({ status: 401, writeError: null });
      expect(await exchange("/elsewhere", chat, { tcp: gateway, token: false })).toEqual({ status: 404, writeError: null });
    }
  });

  test("a body that does not come within the bound is not waited for forever: the answer goes out", async () => {
    const started = performance.now();
    const r = await exchange("/v1/tools/decide", "{}", { pauseMs: 60_000 });
    expect(r.status).toBe(503);
    expect(performance.now() - started).toBeLessThan(15_000);
  }, 30_000);
});
