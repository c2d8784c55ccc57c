// The gateway asks Open WebUI whether a session is still valid; here Open WebUI is a small
// server with its answers scripted (the real one: test/e2e scenario 13, a password changed).
import { afterAll, describe, expect, test } from "bun:test";
import { SESSION_CHECK_PATH, SessionChecks } from "./session-check.ts";

let valid = new Set<string>(["tok-a", "tok-b"]);
let down = false;
const asked: string[] = [];
const owui = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(req) {
    const token = req.headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
    asked.push(`${new URL(req.url).pathname} ${token}`);
    if (down) return new Response("boom", { status: 502 });
    return valid.has(token) ? Response.json({}) : Response.json({ detail: "Invalid token" }, { status: 401 });
  },
});
afterAll(async () => owui.stop(true));
const log = { info() {}, warn() {}, error() {} };

describe("SessionChecks", () => {
  test("asks Open WebUI with the token; the answer holds for the recheck period, then is asked again; a revoked session is refused within it", async () => {
    let now = 1_000;
    const checks = new SessionChecks({ chatuiUrl: `http://127.0.0.1:${owui.port}`, recheckMs: 15_000, log, now: () => now });
    asked.length = 0;
    expect(await checks.check("tok-a")).toEqual({ ok: true });
    expect(asked).toEqual([`${SESSION_CHECK_PATH} tok-a`]);
    expect(await checks.check("tok-a")).toEqual({ ok: true });
    expect(asked.length).toBe(1); // cached
    valid = new Set(["tok-b"]); // Open WebUI revoked tok-a (password changed)
    now += 14_999;
    expect((await checks.check("tok-a")).ok).toBe(true); // still within N
    now += 2;
    expect(await checks.check("tok-a")).toMatchObject({ ok: false, status: 401 });
    expect(asked.length).toBe(2);
  });

  test("concurrent checks of one token make one request; Open WebUI down refuses (503) and is not cached", async () => {
    const checks = new SessionChecks({ chatuiUrl: `http://127.0.0.1:${owui.port}`, recheckMs: 15_000, log });
    asked.length = 0;
    const all = await Promise.all([1, 2, 3, 4].map(async () => checks.check("tok-b")));
    expect(all.every((v) => v.ok)).toBe(true);
    expect(asked.length).toBe(1);
    down = true;
    const c2 = new SessionChecks({ chatuiUrl: `http://127.0.0.1:${owui.port}`, recheckMs: 15_000, log });
    expect(await c2.check("tok-b")).toMatchObject({ ok: false, status: 503 });
    down = false;
    expect(await c2.check("tok-b")).toEqual({ ok: true });
    const gone = new SessionChecks({ chatuiUrl: "http://127.0.0.1:1", recheckMs: 15_000, log });
    expect(await gone.check("tok-b")).toMatchObject({ ok: false, status: 503 });
  });
});
