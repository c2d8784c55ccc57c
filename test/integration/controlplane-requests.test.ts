// The control plane's request gate on a real server (issue 20): a large body from someone who is
// not signed in is refused without being buffered (the server's peak RSS stays bounded), an
// authenticated route refuses an unauthenticated body before reading it, TRACE is 405.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";

const MiB = 1024 * 1024;
let cp: ControlPlaneProcess;

beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp.stop();
  cleanup(cp.dataDir);
});

/** Peak resident memory of the server process so far (VmHWM), in MiB. */
function peakRssMiB(pid: number): number {
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
  return kb / 1024;
}

/** A body of `total` bytes produced as it is sent (chunked: no Content-Length), counting what was pulled. */
function streamedBody(total: number): { body: ReadableStream<Uint8Array>; sent: () => number } {
  const chunk = new Uint8Array(MiB).fill(0x20);
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close();
      sent += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
  return { body, sent: () => sent };
}

async function post(path: string, init: { body: BodyInit; headers?: Record<string, string> }): Promise<number | "connection closed"> {
  try {
    const res = await fetch(`${cp.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...init.headers }, body: init.body, duplex: "half" } as RequestInit);
    await res.arrayBuffer();
    return res.status;
  } catch {
    // The server may close the connection once it has answered and stopped reading.
    return "connection closed";
  }
}

describe("request gate on a real server", () => {
  test("an unauthenticated 100 MiB body is refused without being buffered (peak RSS bound)", async () => {
    const before = peakRssMiB(cp.proc.pid);
    // Declared length over the limit: 413 before reading.
    const declared = await post("/api/v1/auth/sessions", { body: new Blob([new Uint8Array(100 * MiB)]) });
    expect([413, "connection closed"]).toContain(declared);
    // Chunked, no declared length: cut at the limit while reading.
    const chunked = streamedBody(100 * MiB);
    const status = await post("/api/v1/auth/sessions", { body: chunked.body });
    expect([413, "connection closed"]).toContain(status);
    // A signed-in route without a credential: 401 before the body is read.
    const anon = streamedBody(100 * MiB);
    expect([401, "connection closed"]).toContain(await post(`/api/v1/organizations/${cp.orgId}/agents`, { body: anon.body }));
    const growth = peakRssMiB(cp.proc.pid) - before;
    // Buffering the body would add at least 100 MiB (the issue measured 104 → 1110 MiB).
    expect(growth).toBeLessThan(16);
    // The server is still answering.
    expect((await fetch(`${cp.url}/healthz`)).status).toBe(200);
  }, 120_000);

  test("413 names the limit; small bodies still work", async () => {
    const res = await fetch(`${cp.url}/api/v1/auth/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "x@example.com", password: "p".repeat(80 * 1024) }),
    });
    expect(res.status).toBe(413);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect(((await res.json()) as { code: string }).code).toBe("body_too_large");
    const ok = await fetch(`${cp.url}/api/v1/auth/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "x@example.com", password: "wrong password here" }),
    });
    expect(ok.status).toBe(401);
  }, 60_000);

  test("TRACE is 405 with Allow", async () => {
    const res = await fetch(`${cp.url}/api/v1/me`, { method: "TRACE" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toContain("GET");
  });
});
