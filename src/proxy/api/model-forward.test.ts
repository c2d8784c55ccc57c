import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import type { BundleModelProfile } from "../../contract/bundle.ts";
import { ERROR_BODY_LIMIT, readErrorBody } from "../../contract/error-body.ts";
import { startModelServer } from "../../../test/support/model-server.ts";
import { forwardChat } from "./model-forward.ts";

const profile: BundleModelProfile = { id: "mp_1", display_name: "Test LLM", endpoint: "https://llm.test/v1", auth_type: "none", default_model: "m", models: [], api_key_sealed: null };

/** A body of `total` bytes of `fill`, served in 16 KiB chunks on demand; `pulled` counts what was read. */
function countedBody(total: number, fill = "x") {
  const chunk = new TextEncoder().encode(fill.repeat(16 * 1024));
  const seen = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>(
    {
      pull(c) {
        if (seen.pulled >= total) return c.close();
        seen.pulled += chunk.byteLength;
        c.enqueue(chunk);
      },
      cancel() {
        seen.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { body, seen };
}

const forward = async (res: Response) =>
  forwardChat({ profile, apiKey: null, body: new TextEncoder().encode('{"model":"m","messages":[]}'), stream: false, ca: null, fetchImpl: (async () => res) as unknown as typeof fetch });

describe("upstream error bodies", () => {
  test("a huge error body is cut at the limit, not read whole; the caller still gets an OpenAI error", async () => {
    const { body, seen } = countedBody(64 * 1024 * 1024);
    const r = await forward(new Response(body, { status: 502 }));
    expect(r.status).toBe(502);
    const j = await r.json();
    expect(j).toEqual({ error: { message: expect.stringMatching(/^the model endpoint answered 502: x+$/), type: "upstream_error", code: 502 } });
    expect(j.error.message.length).toBeLessThan(600);
    expect(seen.pulled).toBeLessThanOrEqual(ERROR_BODY_LIMIT + 2 * 16 * 1024);
    expect(seen.cancelled).toBe(true);
  });

  test("an OpenAI error within the limit keeps its message, type and code", async () => {
    const r = await forward(Response.json({ error: { message: "slow down", type: "rate_limit", code: "overloaded" } }, { status: 429 }));
    expect(r.status).toBe(429);
    expect(await r.json()).toEqual({ error: { message: "slow down", type: "rate_limit", code: "overloaded" } });
  });
});

describe("upstream error fields", () => {
  test("a code that is not a string or number is replaced by the status; a missing type is upstream_error", async () => {
    const r = await forward(Response.json({ error: { message: "bad", code: { nested: true } } }, { status: 400 }));
    expect(await r.json()).toEqual({ error: { message: "bad", type: "upstream_error", code: 400 } });
    const n = await forward(Response.json({ error: { message: "bad", type: "invalid_request_error", code: null } }, { status: 400 }));
    expect(await n.json()).toEqual({ error: { message: "bad", type: "invalid_request_error", code: 400 } });
  });
});

describe("readErrorBody", () => {
  test("a body within the limit is read whole; one past it is cut at exactly the limit", async () => {
    expect(await readErrorBody(new Response("boom"))).toEqual({ text: "boom", cut: false });
    expect(await readErrorBody(new Response(null, { status: 500 }))).toEqual({ text: "", cut: false });
    const { body } = countedBody(100 * 1024);
    const r = await readErrorBody(new Response(body), 40_000);
    expect(r.cut).toBe(true);
    expect(r.text.length).toBe(40_000);
  });

  test("an upstream that fails mid-body keeps what arrived", async () => {
    let sent = false;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent) return c.error(new Error("connection reset"));
        sent = true;
        c.enqueue(new TextEncoder().encode("partial"));
      },
    });
    expect(await readErrorBody(new Response(body))).toEqual({ text: "partial", cut: false });
  });
});

describe("the last attempt to reach the endpoint (issue 19)", async () => {
  const { EndpointAttempts } = await import("./endpoint-attempts.ts");
  const body = new TextEncoder().encode('{"model":"m","messages":[]}');
  test("a failed connection is kept with its error; any HTTP answer is a reach", async () => {
    const attempts = new EndpointAttempts();
    const refused = await forwardChat({
      profile,
      apiKey: null,
      body,
      stream: false,
      ca: null,
      attempts,
      fetchImpl: (async () => {
        throw new Error("unable to verify the first certificate");
      }) as unknown as typeof fetch,
    });
    expect(refused.status).toBe(502);
    expect(attempts.list()).toEqual([{ profile_id: "mp_1", state: "unreachable", error: "unable to verify the first certificate", at: expect.any(String) }]);
    await forwardChat({ profile, apiKey: null, body, stream: false, ca: null, attempts, fetchImpl: (async () => new Response("no", { status: 401 })) as unknown as typeof fetch });
    expect(attempts.list()).toEqual([{ profile_id: "mp_1", state: "ok", error: null, at: expect.any(String) }]);
  });

  test("a real TLS failure against a server with a certificate the runtime does not trust", async () => {
    const attempts = new EndpointAttempts();
    const server = startModelServer();
    try {
      const res = await forwardChat({ profile: { ...profile, endpoint: server.endpoint }, apiKey: null, body, stream: false, ca: null, attempts });
      expect(res.status).toBe(502);
      const [a] = attempts.list();
      expect(a).toMatchObject({ profile_id: "mp_1", state: "unreachable" });
      expect(a!.error).toMatch(/certificate|self.signed|verify/i);
    } finally {
      await server.stop();
    }
  });
});

describe("the upstream connection", () => {
  test("is kept alive: streamed calls one after another reach the model server on one TLS connection", async () => {
    const server = startModelServer();
    // As the daemon does: one CA array for every call (or none, with the CA in Bun's default store).
    const ca = [readFileSync(server.caFile, "utf8")];
    try {
      for (let i = 0; i < 5; i++) {
        const body = new TextEncoder().encode('{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}');
        const res = await forwardChat({ profile: { ...profile, endpoint: server.endpoint }, apiKey: null, body, stream: true, ca });
        expect(res.status).toBe(200);
        expect(await res.text()).toContain("data: [DONE]");
      }
      expect(server.requests).toHaveLength(5);
      // A new connection per call would be a TLS handshake per call (each a new client port).
      expect(new Set(server.requests.map((r) => r.peer)).size).toBe(1);
    } finally {
      await server.stop();
    }
  });
});
