// The daemon over a real unix socket, against the fake control plane and the HTTPS model double.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Decrypter, Encrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AUDIT_RECORD_LIMITS } from "../contract/audit.ts";
import type { PolicyBundle } from "../contract/bundle.ts";
import { linesLogger } from "../log/index.ts";
import { parseSse, startModelServer } from "../../test/support/model-server.ts";
import { testTls } from "../../test/support/tls.ts";
import { argsDigest, digestOfCanonical } from "./audit/canonical.ts";
import { loadConfig } from "./config.ts";
import { readSealed } from "./state-dir.ts";
import { type Daemon, startDaemon } from "./daemon.ts";
import { TOOL_BODY_LIMIT } from "./api/json-body.ts";
import { fetchPolicyStatus, formatPolicyStatus } from "./policy-show.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "./testing/bundle.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "./testing/fake-control-plane.ts";
import { sealCounters } from "./audit/age-seal.ts";

const TOKEN = "svc_rt_test_token";
const SECRET_ARG = "s3cr3t-argument-value";

function baseBundle(endpoint: string): PolicyBundle {
  return fakeBundle({
    tools: [bundleTool("crm.read"), bundleTool("crm.update", "write")],
    policies: [
      { id: "pol_1", name: "sales read", src: "group:sales", dst: "tool:crm.read", effect: "permit" },
      { id: "pol_2", name: "alice models", src: "user:usr_alice", dst: "model:invoke", effect: "permit" },
      { id: "pol_3", name: "anyone read", src: "*", dst: "tool:crm.read", effect: "permit" },
      { id: "pol_4", name: "no bob read", src: "user:usr_bob", dst: "tool:crm.read", effect: "deny" },
    ],
    identities: [bundleIdentity("alice", ["sales"]), bundleIdentity("bob")],
    model_profile: { id: "mp_1", display_name: "Test LLM", endpoint, auth_type: "none", default_model: "m-small", models: ["m-small", "m-large"], api_key_sealed: null },
  });
}

type Env = { dir: string; cp: FakeControlPlane; model: ReturnType<typeof startModelServer>; daemon: Daemon; socket: string; logs: string[]; env: Record<string, string> };

async function start(cp: FakeControlPlane, dir: string, logs: string[], extra: Record<string, string> = {}) {
  const env = daemonEnv(cp, dir, extra);
  const daemon = await startDaemon(loadConfig(env), linesLogger(logs));
  return { daemon, env };
}

async function waitReady(socket: string) {
  for (let i = 0; i < 400; i++) {
    const r = await fetch("http://localhost/readyz", { unix: socket } as RequestInit).catch(() => null);
    if (r?.status === 200) return;
    await Bun.sleep(25);
  }
  throw new Error("proxy never became ready");
}

let t: Env;
const call = async (path: string, init: { method?: string; body?: unknown; user?: string | null; token?: string | null; headers?: Record<string, string> } = {}) => {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== null) headers.authorization = `Bearer ${init.token ?? TOKEN}`;
  if (init.user) {
    headers["x-svc-user-id"] = init.user;
    headers["x-svc-user-email"] = `${init.user}@example.com`;
  }
  if (init.body !== undefined) headers["content-type"] = "application/json";
  return fetch(`http://localhost${path}`, {
    unix: t.socket,
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  } as RequestInit);
};
/** A POST with a body sent as given (not JSON-encoded here). */
const raw = async (path: string, body: BodyInit) =>
  fetch(`http://localhost${path}`, {
    unix: t.socket,
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "x-svc-user-id": "fe-alice", "content-type": "application/json" },
    body,
    duplex: "half",
  } as RequestInit);
const decide = async (tool: string, user: string | null, args: Record<string, unknown> = { q: SECRET_ARG }) =>
  (await call("/v1/tools/decide", { body: { tool, user: user ? { id: user, email: `${user}@example.com` } : null, args, payload: "payload text" } })).json() as Promise<any>;
const shipped = async (id: string) => {
  for (let i = 0; i < 400 && !t.cp.audit.has(id); i++) await Bun.sleep(10);
  return t.cp.audit.get(id)!;
};

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-proxyd-"));
  const model = startModelServer();
  const cp = startFakeControlPlane(baseBundle(model.endpoint), TOKEN);
  const logs: string[] = [];
  const { daemon, env } = await start(cp, dir, logs, { SVC_PROXY_CA_FILE: model.caFile, SVC_PROXY_METRICS_LISTEN: "127.0.0.1:0" });
  t = { dir, cp, model, daemon, socket: join(dir, "p.sock"), logs, env };
  await waitReady(t.socket);
});

afterAll(async () => {
  await t.daemon.shutdown(1000);
  await t.cp.stop();
  await t.model.stop();
  rmSync(t.dir, { recursive: true, force: true });
});

describe("start", () => {
  test("bootstraps with replica id and credential-sync recipient; socket is 0600; identity 0600", () => {
    expect(t.cp.bootstraps.length).toBe(1);
    expect(t.cp.bootstraps[0]!.replica_id).toBe(t.daemon.replicaId);
    expect(t.cp.bootstraps[0]!.credential_sync_recipient).toStartWith("age1");
    expect(statSync(t.socket).mode & 0o777).toBe(0o600);
    expect(statSync(join(t.dir, "state", "credential-sync.key")).mode & 0o777).toBe(0o600);
    expect(t.cp.bundleAnswers[0]).toMatchObject({ status: 200, version: "1", replica: t.daemon.replicaId });
  });

  test("readyz needs no token; everything else does", async () => {
    expect((await call("/readyz", { token: null })).status).toBe(200);
    const r = await call("/v1/policy", { token: null });
    expect(r.status).toBe(401);
    expect((await r.json()).error.code).toBe("unauthorized");
    expect((await call("/v1/policy", { token: "svc_rt_wrong" })).status).toBe(401);
  });

  test("GET /v1/policy and svc policy show", async () => {
    const s = await (await call("/v1/policy")).json();
    expect(s).toMatchObject({ tool_count: 2, state: "ready", policy_revision: 1, bundle_version: 1 });
    expect(Date.parse(s.last_success)).toBeGreaterThan(0);
    const viaCli = await fetchPolicyStatus({ SVC_RUNTIME_TOKEN: TOKEN, SVC_RUNTIME_SOCKET_PATH: t.socket });
    expect(viaCli.policy_revision).toBe(1);
    expect(formatPolicyStatus(viaCli)).toMatch(/^tool_count:\s+2\nstate:\s+ready\npolicy_revision:\s+1\nlast_success:\s+\d{4}-/);
    await expect(fetchPolicyStatus({ SVC_RUNTIME_TOKEN: TOKEN, SVC_RUNTIME_SOCKET_PATH: join(t.dir, "none.sock") })).rejects.toThrow(/not running/);
  });
});

describe("tool decisions", () => {
  test("permit, deny override, unregistered, unlinked with claim link, no session user", async () => {
    const p = await decide("crm.read", "fe-alice");
    expect(p).toEqual({ decision: "permit", record_id: expect.stringMatching(/^rec_/) });
    // The refusal texts are spec §7's, character by character.
    const bob = await decide("crm.read", "fe-bob");
    expect(bob).toEqual({ decision: "deny", record_id: expect.stringMatching(/^rec_/), code: "svc.denied", message: 'Refused (svc.denied): policy "no bob read" denies tool:crm.read' });
    const nr = await decide("mail.send", "fe-alice");
    expect(nr).toEqual({ decision: "deny", record_id: expect.stringMatching(/^rec_/), code: "tool_not_registered", message: "tool_not_registered" });
    const un = await decide("crm.read", "fe-stranger");
    expect(un).toMatchObject({ decision: "deny", code: "identity.unlinked", message: "Refused (identity.unlinked)" });
    expect(un.claim_url).toStartWith(`${t.cp.url}/claim/`);
    expect(un.message).not.toContain(un.claim_url);
    expect(t.cp.claims.at(-1)).toMatchObject({ remote_user_id: "fe-stranger" });
    const anon = await decide("crm.read", null);
    expect(anon.decision).toBe("permit"); // "*" permits the installation subject

    const rp = await shipped(p.record_id);
    expect(rp).toMatchObject({
      kind: "tool",
      decision: "permit",
      reason: "policy",
      policy_id: "pol_1",
      tool_name: "crm.read",
      action: "tool:crm.read",
      subject: { user_id: "usr_alice", remote_user_id: "fe-alice", via_installation: false },
      replica_id: t.daemon.replicaId,
      digest_key_id: "dk_TEST",
      ciphertext: null,
      recipient_key_ids: [],
    });
    expect(rp.args_digest).toBe(argsDigest(t.cp.digestKey, { q: SECRET_ARG }));
    expect((await shipped(bob.record_id)).policy_id).toBe("pol_4");
    expect((await shipped(nr.record_id)).reason).toBe("tool_not_registered");
    expect((await shipped(un.record_id)).subject).toEqual({ user_id: null, remote_user_id: "fe-stranger", via_installation: true });
    expect((await shipped(anon.record_id)).subject).toEqual({ user_id: null, remote_user_id: null, via_installation: true });
  });

  test("outcome of a permitted call is audited with a ref; unknown ref is 404", async () => {
    const p = await decide("crm.read", "fe-alice");
    const o = await (await call("/v1/tools/outcome", { body: { record_id: p.record_id, outcome: "error", exit_code: 3 } })).json();
    const rec = await shipped(o.record_id);
    expect(rec).toMatchObject({ kind: "outcome", ref: p.record_id, outcome: "error", exit_code: 3, tool_name: "crm.read", subject: { user_id: "usr_alice" } });
    expect((await call("/v1/tools/outcome", { body: { record_id: "rec_NOPE", outcome: "ok" } })).status).toBe(404);
  });

  test("bad bodies are 422 in OpenAI error format", async () => {
    const r = await call("/v1/tools/decide", { body: { tool: "crm.read" } });
    expect(r.status).toBe(422);
    expect((await r.json()).error.code).toBe("validation_failed");
  });

  test("malformed JSON is 400 invalid_json in OpenAI error format, on every route that takes a body", async () => {
    for (const path of ["/v1/tools/decide", "/v1/tools/outcome", "/v1/chat/completions"]) {
      const r = await raw(path, '{"tool": "crm.read", ');
      expect(r.status).toBe(400);
      const j = await r.json();
      expect(j).toEqual({ error: { message: expect.stringContaining("not valid JSON"), type: "invalid_request_error", code: "invalid_json" } });
    }
  });

  test("a body over the route's limit is 413 body_too_large, declared or chunked; the connection stays usable", async () => {
    const big = JSON.stringify({ tool: "crm.read", user: null, args: { blob: "x".repeat(TOOL_BODY_LIMIT) } });
    const declared = await raw("/v1/tools/decide", big);
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ error: { message: expect.stringContaining(String(TOOL_BODY_LIMIT)), type: "invalid_request_error", code: "body_too_large" } });
    // no Content-Length: sent chunked, and far more than the limit
    const chunk = new TextEncoder().encode("x".repeat(256 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent++ < 40) c.enqueue(chunk);
        else c.close();
      },
    });
    const chunked = await raw("/v1/tools/outcome", stream);
    expect(chunked.status).toBe(413);
    expect((await chunked.json()).error.code).toBe("body_too_large");
    // chat completions allow more than tool calls
    const chat = await call("/v1/chat/completions", { user: "fe-alice", body: { model: "m-small", messages: [{ role: "user", content: "x".repeat(2 * TOOL_BODY_LIMIT) }] } });
    expect(chat.status).toBe(200);
    await chat.body?.cancel();
    expect((await decide("crm.read", "fe-alice")).decision).toBe("permit");
  });

  test("JSON nested absurdly deep is 400 json_too_deep, not a 500", async () => {
    const r = await raw("/v1/tools/decide", `{"tool":"crm.read","user":null,"args":{"a":${"[".repeat(100_000)}${"]".repeat(100_000)}}}`);
    expect(r.status).toBe(400);
    expect((await r.json()).error.code).toBe("json_too_deep");
  });

  test("exact arguments: 64-bit integers and long decimals are digested as the caller sent them", async () => {
    const exact = '{"account":18446744073709551615,"n":9007199254740993,"rate":0.1000000000000000055511151231257827}';
    const r = await raw(
      "/v1/tools/decide",
      `{"tool":"crm.read","user":{"id":"fe-alice"},"args":{"n": 9007199254740993, "account": 18446744073709551615, "rate": 0.1000000000000000055511151231257827}}`,
    );
    expect(r.status).toBe(200);
    const rec = await shipped(((await r.json()) as { record_id: string }).record_id);
    expect(rec.args_digest).toBe(digestOfCanonical(t.cp.digestKey, exact));
    // what JSON.parse would have made of them is a different call
    expect(rec.args_digest).not.toBe(argsDigest(t.cp.digestKey, JSON.parse(exact)));
  });

  test("inputs the control plane would refuse are 400 before any record is written", async () => {
    const cases = [
      { body: '{"tool":"crm.read","user":{"id":"fe-alice"},"args":{"x":1e999}}', code: "number_out_of_range" },
      { body: '{"tool":"crm.read","user":{"id":"fe-alice"},"args":{"x":[-1E400]}}', code: "number_out_of_range" },
      { body: '{"tool":"crm.read\\u0000evil","user":{"id":"fe-alice"},"args":{}}', code: "unrecordable_call" },
      { body: '{"tool":"crm.read","user":{"id":"fe-al\\u0000ice"},"args":{}}', code: "unrecordable_call" },
    ];
    for (const c of cases) {
      const r = await raw("/v1/tools/decide", c.body);
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: { code: string; type: string } }).error).toMatchObject({ code: c.code, type: "invalid_request_error" });
    }
    // the next good decision ships; nothing of the refused calls was spooled or shipped
    await shipped((await decide("crm.read", "fe-alice")).record_id);
    const spooled = [...new Bun.Glob("*").scanSync(join(t.dir, "spool"))].map((f) => readFileSync(join(t.dir, "spool", f)).toString("latin1")).join("");
    expect(spooled).not.toContain("\\u0000");
    expect([...t.cp.audit.values()].some((rec) => JSON.stringify(rec).includes("\\u0000"))).toBe(false);
  });

  test("encryption follows the bundle's recipients: two, then one, then digest-only", async () => {
    const ids = await Promise.all([1, 2].map(async () => generateX25519Identity()));
    const recips = await Promise.all(ids.map(async (id, i) => ({ key_id: `key_${i}`, recipient: await identityToRecipient(id), kind: "customer" as const })));
    const open = async (ct: string, id: string) => {
      const d = new Decrypter();
      d.addIdentity(id);
      return JSON.parse(await d.decrypt(Buffer.from(ct, "base64"), "text"));
    };
    // New recipients: the first records find no stanza key ready and wait for the worker; no
    // X25519 work runs on the event loop (sealCounters counts any made inline).
    const inline = sealCounters.inlineStanzaKeys;
    t.cp.setBundle({ recipients: recips });
    await t.daemon.loop.pollNow();
    const two = await shipped((await decide("crm.read", "fe-alice", { n: 2, secret: SECRET_ARG })).record_id);
    expect(two.recipient_key_ids).toEqual(["key_0", "key_1"]);
    for (const id of ids) expect(await open(two.ciphertext!, id)).toEqual({ arguments: { n: 2, secret: SECRET_ARG }, payload: "payload text" });
    t.cp.setBundle({ recipients: [recips[1]!] });
    await t.daemon.loop.pollNow();
    const one = await shipped((await decide("crm.read", "fe-alice")).record_id);
    expect(one.recipient_key_ids).toEqual(["key_1"]);
    expect(await open(one.ciphertext!, ids[1]!)).toMatchObject({ arguments: { q: SECRET_ARG } });
    await expect(open(one.ciphertext!, ids[0]!)).rejects.toThrow();
    t.cp.setBundle({ recipients: [] });
    await t.daemon.loop.pollNow();
    const none = await shipped((await decide("crm.read", "fe-alice")).record_id);
    expect(none).toMatchObject({ ciphertext: null, recipient_key_ids: [], digest_key_id: "dk_TEST" });
    expect(sealCounters.inlineStanzaKeys).toBe(inline);
    expect((await (await call("/metrics")).text()).split("\n")).toContain(`svc_proxy_seal_inline_stanza_keys_total ${inline}`);
  });

  test("a condition on the arguments permits one value and refuses another; a condition error refuses naming the policy", async () => {
    const before = t.cp.bundle.policies;
    t.cp.setBundle({ policies: [{ id: "pol_c", name: "small updates", src: "group:sales", dst: "tool:crm.update", effect: "permit", condition: "args.amount <= 500" }] });
    await t.daemon.loop.pollNow();
    try {
      expect((await decide("crm.update", "fe-alice", { amount: 500 })).decision).toBe("permit");
      expect(await decide("crm.update", "fe-alice", { amount: 501 })).toMatchObject({
        decision: "deny",
        code: "svc.denied",
        message: "Refused (svc.denied): no policy permits tool:crm.update for this user",
      });
      const broken = await decide("crm.update", "fe-alice", { total: 1 });
      expect(broken).toMatchObject({ decision: "deny", code: "svc.denied", message: 'Refused (svc.denied): policy "small updates" could not evaluate its condition (field not found: amount)' });
      expect(await shipped(broken.record_id)).toMatchObject({ decision: "deny", policy_id: "pol_c" });
    } finally {
      t.cp.setBundle({ policies: before });
      await t.daemon.loop.pollNow();
    }
  });

  test("a shadow policy is recorded as the would-be decision on the audit record and changes nothing", async () => {
    const before = t.cp.bundle.policies;
    t.cp.setBundle({ policies: [...before, { id: "pol_s", name: "big reads", src: "*", dst: "tool:crm.read", effect: "deny", condition: "args.n > 10", mode: "shadow" }] });
    await t.daemon.loop.pollNow();
    try {
      const big = await decide("crm.read", "fe-alice", { n: 11 });
      expect(big.decision).toBe("permit");
      expect(await shipped(big.record_id)).toMatchObject({
        decision: "permit",
        policy_id: "pol_1",
        shadow: { decision: "deny", policy_id: "pol_s", reason: 'Refused (svc.denied): policy "big reads" denies tool:crm.read' },
      });
      const small = await decide("crm.read", "fe-alice", { n: 1 });
      expect((await shipped(small.record_id)).shadow).toEqual({ decision: "permit", policy_id: "pol_1", reason: "policy" });
      const other = await decide("crm.update", "fe-alice", { n: 11 });
      expect(await shipped(other.record_id)).not.toHaveProperty("shadow");
    } finally {
      t.cp.setBundle({ policies: before });
      await t.daemon.loop.pollNow();
    }
  });

  test("plain arguments never reach the logs or the spool files", async () => {
    await decide("crm.read", "fe-alice", { secret: SECRET_ARG });
    expect(t.logs.join("\n")).not.toContain(SECRET_ARG);
    expect(t.logs.join("\n")).not.toContain(Buffer.from(t.cp.digestKey).toString("base64"));
    const files = new Bun.Glob("*").scanSync(join(t.dir, "spool"));
    for (const f of files) expect(await Bun.file(join(t.dir, "spool", f)).text()).not.toContain(SECRET_ARG);
  });
});

describe("models", () => {
  test("v1: the list follows model:invoke permits", async () => {
    const alice = await (await call("/v1/models", { user: "fe-alice" })).json();
    expect(alice).toEqual({ object: "list", data: [expect.objectContaining({ id: "m-small", object: "model" }), expect.objectContaining({ id: "m-large", object: "model" })] });
    expect((await (await call("/v1/models", { user: "fe-bob" })).json()).data).toEqual([]);
    expect((await (await call("/v1/models", { user: "fe-stranger" })).json()).data).toEqual([]);
  });

  test("chat, non-streaming: forwarded to {endpoint}/chat/completions and relayed", async () => {
    const before = t.model.requests.length;
    const r = await call("/v1/chat/completions", { user: "fe-alice", body: { model: "m-large", messages: [{ role: "user", content: "hi" }] } });
    expect(r.status).toBe(200);
    const j = await r.json();
    expect(j.choices[0].message.content).toBe("Hello from the model");
    const req = t.model.requests[before]!;
    expect(req.path).toBe("/v1/chat/completions");
    expect(req.body.model).toBe("m-large");
    expect(req.headers.authorization).toBeUndefined();
  });

  test("chat: the conversation reaches the provider byte for byte (64-bit integers, escapes); only model and stream_options are spliced in", async () => {
    const conversation = '[{"role":"user","content":"say \\"model\\": \\u00e9 \u00e9","n":18446744073709551615, "model":"m-large"}]';
    const before = t.model.requests.length;
    const r = await raw("/v1/chat/completions", `{"messages": ${conversation},"stream":true}`);
    expect(r.status).toBe(200);
    await r.text();
    expect(t.model.requests[before]!.raw).toBe(`{"messages": ${conversation},"stream":true,"model":"m-small","stream_options":{"include_usage":true}}`);
    // A key named twice at the top level: which one a provider takes is not certain, so neither is.
    const twice = await raw("/v1/chat/completions", '{"model":"m-small","messages":[],"model":"m-large"}');
    expect(twice.status).toBe(400);
    expect((await twice.json()).error).toMatchObject({ type: "invalid_request_error", code: "duplicate_key" });
    expect(t.model.requests.length).toBe(before + 1);
  });

  test("chat, streaming: the first chunk reaches the client before the upstream sends the rest", async () => {
    const gate = Promise.withResolvers<void>();
    t.model.behaviour = { text: "one two three", holdAfterFirstChunk: gate.promise };
    const r = await call("/v1/chat/completions", { user: "fe-alice", body: { model: "m-small", stream: true, messages: [{ role: "user", content: "hi" }] } });
    expect(r.headers.get("content-type")).toContain("text/event-stream");
    const reader = r.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toStartWith("data: ");
    expect(parseSse(first)[0].choices[0].delta.role).toBe("assistant");
    gate.resolve(); // only now does the upstream send the rest
    let rest = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    const events = parseSse(rest);
    expect(events.at(-1)).toBe("[DONE]");
    expect(
      events
        .filter((e) => e !== "[DONE]")
        .map((e) => e.choices[0].delta.content ?? "")
        .join(""),
    ).toBe("one two three");
    t.model.behaviour = { text: "Hello from the model" };
  });

  test("chat, streaming tool calls pass through in delta.tool_calls", async () => {
    t.model.behaviour = { text: "", toolCall: { id: "call_9", name: "crm_read", arguments: '{"id":42}' } };
    const r = await call("/v1/chat/completions", {
      user: "fe-alice",
      body: { model: "m-small", stream: true, messages: [{ role: "user", content: "x" }], tools: [{ type: "function", function: { name: "crm_read", parameters: {} } }] },
    });
    const events = parseSse(await r.text()).filter((e) => e !== "[DONE]");
    const calls = events.flatMap((e) => e.choices[0].delta.tool_calls ?? []);
    expect(calls[0]).toMatchObject({ id: "call_9", function: { name: "crm_read" } });
    expect(calls.map((c: any) => c.function.arguments).join("")).toBe('{"id":42}');
    expect(events.at(-1).choices[0].finish_reason).toBe("tool_calls");
    expect(t.model.requests.at(-1)!.body.tools[0].function.name).toBe("crm_read");
    t.model.behaviour = { text: "Hello from the model" };
  });

  // Usage (issue 16): the outcome record of a model call carries the provider's counts.
  const modelOutcome = async (ref: string) => {
    for (let i = 0; i < 400; i++) {
      const rec = [...t.cp.audit.values()].find((r) => r.kind === "outcome" && r.ref === ref);
      if (rec) return rec;
      await Bun.sleep(10);
    }
    throw new Error(`no outcome record for ${ref}`);
  };

  test("usage, not streamed: the completion's usage is recorded, the answer relayed byte for byte", async () => {
    const r = await call("/v1/chat/completions", { user: "fe-alice", body: { model: "m-large", messages: [{ role: "user", content: "one two three four" }] } });
    const j = await r.json();
    expect(j.usage).toEqual({ prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 });
    const ref = r.headers.get("x-svc-record-id")!;
    expect((await shipped(ref)).kind).toBe("model");
    const out = await modelOutcome(ref);
    expect(out).toMatchObject({ action: "model:invoke", model: "m-large", outcome: "ok", decision: "permit", prompt_tokens: 4, completion_tokens: 4, subject: { user_id: "usr_alice" } });
    expect(out.duration_ms).toBeGreaterThanOrEqual(0);
    expect(out.cost).toBeUndefined(); // no price on the profile
    expect(out.ciphertext).toBeNull();
  });

  test("a background task the Pipe names (x-svc-task) is on the decision and outcome records; a user's turn has none", async () => {
    const titled = await call("/v1/chat/completions", {
      user: "fe-alice",
      headers: { "x-svc-task": "title_generation" },
      body: { model: "m-large", messages: [{ role: "user", content: "a title" }] },
    });
    expect(titled.status).toBe(200);
    const ref = titled.headers.get("x-svc-record-id")!;
    expect((await shipped(ref)).task).toBe("title_generation");
    expect((await modelOutcome(ref)).task).toBe("title_generation");
    const odd = await call("/v1/chat/completions", { user: "fe-alice", headers: { "x-svc-task": "Title Generation" }, body: { model: "m-large", messages: [{ role: "user", content: "x" }] } });
    expect((await shipped(odd.headers.get("x-svc-record-id")!)).task).toBeUndefined();
  });

  test("usage, streamed: asked upstream, and the usage-only chunk is stripped when the caller did not ask", async () => {
    t.model.behaviour = { text: "alpha beta gamma" };
    const r = await call("/v1/chat/completions", { user: "fe-alice", body: { model: "m-small", stream: true, messages: [{ role: "user", content: "a b" }] } });
    const text = await r.text();
    expect(t.model.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true });
    // exactly what the provider sends to a caller that did not ask for usage
    for (const e of parseSse(text))
      if (e !== "[DONE]") {
        expect(e.choices).toHaveLength(1);
        expect("usage" in e).toBe(false);
      }
    expect(parseSse(text).at(-1)).toBe("[DONE]");
    const out = await modelOutcome(r.headers.get("x-svc-record-id")!);
    expect(out).toMatchObject({ outcome: "ok", prompt_tokens: 2, completion_tokens: 3 });
    // a caller that asks gets the usage chunk as the provider sent it
    const asked = await call("/v1/chat/completions", {
      user: "fe-alice",
      body: { model: "m-small", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "a b c" }] },
    });
    const events = parseSse(await asked.text()).filter((e) => e !== "[DONE]");
    expect(events.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } });
    expect(events[0].usage).toBeNull();
    expect(await modelOutcome(asked.headers.get("x-svc-record-id")!)).toMatchObject({ prompt_tokens: 3, completion_tokens: 3 });
  });

  test("usage: cost at the profile's price; an upstream error is an outcome without usage", async () => {
    const profile = baseBundle(t.model.endpoint).model_profile!;
    t.cp.setBundle({ model_profile: { ...profile, prices: { "m-small": { prompt: 2, completion: 10 } } } });
    await t.daemon.loop.pollNow();
    t.model.behaviour = { text: "x", usage: { prompt_tokens: 1000, completion_tokens: 500 } };
    const r = await call("/v1/chat/completions", { user: "fe-alice", body: { model: "m-small", messages: [{ role: "user", content: "hi" }] } });
    await r.text();
    // 1000 × 2 / 1M + 500 × 10 / 1M
    expect((await modelOutcome(r.headers.get("x-svc-record-id")!)).cost).toBeCloseTo(0.007, 9);
    t.model.behaviour = { text: "", error: { status: 500, message: "down" } };
    const failed = await call("/v1/chat/completions", { user: "fe-alice", body: { model: "m-small", messages: [] } });
    expect(failed.status).toBe(500);
    const out = await modelOutcome(failed.headers.get("x-svc-record-id")!);
    expect(out.outcome).toBe("error");
    expect(out.prompt_tokens).toBeUndefined();
    t.model.behaviour = { text: "Hello from the model" };
    t.cp.setBundle({ model_profile: profile });
    await t.daemon.loop.pollNow();
  });

  test("metrics: decisions by kind and result, latency, tokens, spool and bundle; on the socket with the token and on the TCP listener", async () => {
    const metric = (text: string, series: string) =>
      Number(
        text
          .split("\n")
          .find((l) => l.startsWith(`${series} `))
          ?.slice(series.length + 1) ?? NaN,
      );
    const scrape = async () => (await call("/metrics")).text();
    const before = await scrape();
    await call("/v1/tools/decide", { body: { tool: "crm.read", args: {}, user: { id: "fe-alice" } } });
    await call("/v1/tools/decide", { body: { tool: "crm.read", args: {}, user: { id: "fe-bob" } } });
    t.model.behaviour = { text: "a b c", usage: { prompt_tokens: 11, completion_tokens: 3 } };
    const r = await call("/v1/chat/completions", { user: "fe-alice", body: { model: "m-small", stream: true, messages: [{ role: "user", content: "x" }] } });
    await r.text();
    await modelOutcome(r.headers.get("x-svc-record-id")!);
    t.model.behaviour = { text: "Hello from the model" };
    const after = await scrape();
    const grew = (series: string) => metric(after, series) - (metric(before, series) || 0);
    expect(grew('svc_proxy_decisions_total{kind="tool",result="permit"}')).toBe(1);
    expect(grew('svc_proxy_decisions_total{kind="tool",result="svc.denied"}')).toBe(1);
    expect(grew('svc_proxy_decisions_total{kind="model",result="permit"}')).toBe(1);
    expect(grew('svc_proxy_decision_duration_seconds_count{kind="tool"}')).toBe(2);
    expect(grew('svc_proxy_model_tokens_total{model="m-small",type="prompt"}')).toBe(11);
    expect(grew('svc_proxy_model_tokens_total{model="m-small",type="completion"}')).toBe(3);
    expect(grew('svc_proxy_model_call_duration_seconds_count{model="m-small"}')).toBe(1);
    expect(metric(after, "svc_proxy_bundle_revision")).toBe(t.cp.bundle.revision);
    expect(metric(after, "svc_proxy_bundle_age_seconds")).toBeGreaterThanOrEqual(0);
    expect(metric(after, "svc_proxy_spool_depth")).toBeGreaterThanOrEqual(0);
    expect(metric(after, "svc_proxy_spool_oldest_unshipped_age_seconds")).toBeGreaterThanOrEqual(0);
    expect(metric(after, "svc_proxy_ready")).toBe(1);
    expect(after).toContain("# TYPE svc_proxy_decision_duration_seconds histogram");
    // the socket's /metrics needs the token; the TCP listener serves /metrics alone, without one
    expect((await call("/metrics", { token: null })).status).toBe(401);
    const tcp = await fetch(t.daemon.metricsUrl!);
    expect(tcp.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
    expect(await tcp.text()).toContain("svc_proxy_decisions_total{");
    expect((await fetch(new URL("/v1/policy", t.daemon.metricsUrl!))).status).toBe(404);
  });

  test("upstream errors come back in OpenAI error format with the upstream status", async () => {
    t.model.behaviour = { text: "", error: { status: 429, message: "slow down" } };
    let r = await call("/v1/chat/completions", { user: "fe-alice", body: { messages: [] } });
    expect(r.status).toBe(429);
    expect(await r.json()).toEqual({ error: { message: "slow down", type: "server_error", code: "overloaded" } });
    t.model.behaviour = { text: "", error: { status: 500, rawBody: "boom" } };
    r = await call("/v1/chat/completions", { user: "fe-alice", body: { messages: [] } });
    expect(r.status).toBe(500);
    expect((await r.json()).error).toMatchObject({ type: "upstream_error", code: 500, message: expect.stringContaining("boom") });
    t.model.behaviour = { text: "Hello from the model" };
  });

  test("refusals: OpenAI error format with the spec's text, audited", async () => {
    const r = await call("/v1/chat/completions", { user: "fe-bob", body: { messages: [{ role: "user", content: "hi" }] } });
    expect(r.status).toBe(403);
    const j = await r.json();
    expect(j.error).toMatchObject({ type: "refusal", code: "svc.denied" });
    expect(j.error.message).toStartWith("Refused (svc.denied): ");
    const rec = await shipped(j.error.record_id);
    expect(rec).toMatchObject({ kind: "model", action: "model:invoke", decision: "deny", model: "m-small", subject: { user_id: "usr_bob" } });
    const un = await (await call("/v1/chat/completions", { user: "fe-stranger", body: { messages: [] } })).json();
    expect(un.error.code).toBe("identity.unlinked");
    expect(un.error.message).toBe("Refused (identity.unlinked)");
    expect(un.error.claim_url).toStartWith(`${t.cp.url}/claim/`);
    const unknownModel = await call("/v1/chat/completions", { user: "fe-alice", body: { model: "gpt-9", messages: [] } });
    expect(unknownModel.status).toBe(404);
    const nf = (await unknownModel.json()).error;
    expect(nf.code).toBe("model_not_found");
    // audited like every decision, before the answer
    expect(await shipped(nf.record_id)).toMatchObject({ kind: "model", action: "model:invoke", decision: "deny", reason: "model_not_found", model: "gpt-9", subject: { user_id: "usr_alice" } });
    // a model name of any length is audited cut to the contract's bound, so the record is accepted
    const long = (await (await call("/v1/chat/completions", { user: "fe-alice", body: { model: "m".repeat(5000), messages: [] } })).json()).error;
    const longRec = await shipped(long.record_id);
    expect(longRec.model).toBe("m".repeat(AUDIT_RECORD_LIMITS.model));
  });

  test("an unknown model asked by a caller policy refuses: the refusal, not the profile's model list", async () => {
    const bob = await call("/v1/chat/completions", { user: "fe-bob", body: { model: "gpt-9", messages: [] } });
    expect(bob.status).toBe(403);
    const j = (await bob.json()).error;
    expect(j).toMatchObject({ code: "svc.denied", type: "refusal" });
    expect(JSON.stringify(j)).not.toContain("m-small");
    expect(await shipped(j.record_id)).toMatchObject({ decision: "deny", reason: "svc.denied", model: "gpt-9" });
    const stranger = (await (await call("/v1/chat/completions", { user: "fe-stranger", body: { model: "gpt-9", messages: [] } })).json()).error;
    expect(stranger).toMatchObject({ code: "identity.unlinked", message: "Refused (identity.unlinked)", claim_url: expect.stringContaining("/claim/") });
  });

  test("api_key profile: the key is unsealed with the credential-sync identity and sent upstream", async () => {
    const enc = new Encrypter();
    enc.addRecipient(t.cp.bootstraps[0]!.credential_sync_recipient);
    const sealed = Buffer.from(await enc.encrypt("sk-test-123")).toString("base64");
    t.cp.setBundle({ model_profile: { ...t.cp.bundle.model_profile!, auth_type: "api_key", api_key_sealed: sealed } });
    await t.daemon.loop.pollNow();
    const r = await call("/v1/chat/completions", { user: "fe-alice", body: { messages: [{ role: "user", content: "hi" }] } });
    expect(r.status).toBe(200);
    expect(t.model.requests.at(-1)!.headers.authorization).toBe("Bearer sk-test-123");
    expect(t.logs.join("\n")).not.toContain("sk-test-123");
  });
});

describe("bundle loop, heartbeat, shipper", () => {
  test("an unchanged bundle is a 304 with If-None-Match", async () => {
    await t.daemon.loop.pollNow();
    const last = t.cp.bundleAnswers.at(-1)!;
    expect(last).toMatchObject({ status: 304, ifNoneMatch: `"r${t.cp.bundle.revision}"` });
  });

  test("control plane down: stale, still deciding; back: ready", async () => {
    t.cp.down = true;
    await t.daemon.loop.pollNow();
    const s = await (await call("/v1/policy")).json();
    expect(s.state).toBe("stale");
    expect(s.last_error).toContain("503");
    // svc policy show says plainly that decisions run on the last good bundle
    expect(s.reason).toBe(`the control plane is unreachable or not answering; decisions continue on the last good bundle (revision ${t.cp.bundle.revision})`);
    const shown = formatPolicyStatus(await fetchPolicyStatus({ SVC_RUNTIME_TOKEN: TOKEN, SVC_RUNTIME_SOCKET_PATH: t.socket }));
    expect(shown).toMatch(/^state:\s+stale\nreason:\s+the control plane is unreachable or not answering; decisions continue on the last good bundle \(revision \d+\)\n/m);
    expect((await call("/readyz", { token: null })).status).toBe(200);
    expect((await decide("crm.read", "fe-alice")).decision).toBe("permit");
    t.cp.down = false;
    await t.daemon.loop.pollNow();
    const back = await (await call("/v1/policy")).json();
    expect(back).toMatchObject({ state: "ready", reason: null });
    expect(formatPolicyStatus(back)).not.toContain("reason:");
  });

  test("heartbeat names the replica and reports state", async () => {
    await t.daemon.heartbeat.beat();
    const hb = t.cp.heartbeats.at(-1)!;
    expect(hb.replica).toBe(t.daemon.replicaId);
    expect(hb.body).toMatchObject({ replica_id: t.daemon.replicaId, state: "ready", policy_revision: t.cp.bundle.revision, tool_count: 2 });
  });

  test("shipping retries after failures and every record arrives once", async () => {
    t.cp.failAuditBatches = 2;
    const before = t.cp.auditBatches;
    const d = await decide("crm.read", "fe-alice");
    const rec = await shipped(d.record_id);
    expect(rec.id).toBe(d.record_id);
    expect(t.cp.auditBatches - before).toBeGreaterThanOrEqual(3);
    for (let i = 0; i < 200 && t.daemon.spool.depth > 0; i++) await Bun.sleep(10);
    expect(t.daemon.spool.depth).toBe(0);
  });
});

describe("restart", () => {
  test("with the control plane down: the last good bundle is reloaded, state stale, decisions continue", async () => {
    const logs: string[] = [];
    const dir2 = mkdtempSync(join(tmpdir(), "svc-proxyd2-"));
    // a second proxy sharing the state dir but not the socket, after the first one stopped polling
    t.cp.down = true;
    const { daemon } = await start(t.cp, t.dir, logs, { SVC_RUNTIME_SOCKET_PATH: join(dir2, "p2.sock"), SVC_PROXY_AUDIT: join(dir2, "spool") });
    try {
      await waitReady(join(dir2, "p2.sock"));
      const s = await (await fetch("http://localhost/v1/policy", { unix: join(dir2, "p2.sock"), headers: { authorization: `Bearer ${TOKEN}` } } as RequestInit)).json();
      expect(s).toMatchObject({ state: "stale", policy_revision: t.cp.bundle.revision, tool_count: 2 });
      expect(s.reason).toContain("decisions continue on the last good bundle");
      // last_success: when the reloaded bundle was last sent or confirmed, not "never"
      const persisted = readSealed(join(t.dir, "state"), "last-good-bundle.json", TOKEN) as { confirmed_at: string };
      expect(s.last_success).toBe(persisted.confirmed_at);
      expect(Date.parse(s.last_success)).toBeLessThanOrEqual(Date.parse(t.daemon.status.report(0).last_success!));
      const shown = formatPolicyStatus(await fetchPolicyStatus({ SVC_RUNTIME_TOKEN: TOKEN, SVC_RUNTIME_SOCKET_PATH: join(dir2, "p2.sock") }));
      expect(shown).toMatch(/^reason:\s+the control plane is unreachable.*decisions continue on the last good bundle/m);
      expect(shown).toMatch(/^state:\s+stale$/m);
      expect(shown).toContain(`\nlast_success:    ${persisted.confirmed_at}\n`);
      expect(daemon.replicaId).toBe(t.daemon.replicaId);
      const r = await fetch("http://localhost/v1/tools/decide", {
        unix: join(dir2, "p2.sock"),
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ tool: "crm.read", user: { id: "fe-alice" }, args: {} }),
      } as RequestInit);
      expect((await r.json()).decision).toBe("permit");
      expect(daemon.spool.depth).toBe(1);
    } finally {
      t.cp.down = false;
      await daemon.shutdown(2000);
      rmSync(dir2, { recursive: true, force: true });
    }
  });
});

describe("shutdown", () => {
  test("a chat stream still open does not hold the shutdown past its deadline", async () => {
    // An upstream that sends one chunk and then stalls for as long as the test wants (no idle
    // timeout cuts it), on the test CA like the model double.
    const tls = testTls();
    const gate = Promise.withResolvers<void>();
    const upstream = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      tls: { cert: tls.cert, key: tls.key },
      fetch: () =>
        new Response(
          new ReadableStream<Uint8Array>({
            async start(c) {
              c.enqueue(new TextEncoder().encode('data: {"choices":[{"delta":{"role":"assistant"}}]}\n\n'));
              await gate.promise;
              c.close();
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        ),
    });
    const previous = t.cp.bundle.model_profile!;
    t.cp.setBundle({ model_profile: { ...previous, endpoint: `https://127.0.0.1:${upstream.port}/v1` } });
    const dir2 = mkdtempSync(join(tmpdir(), "svc-proxyd-stop-"));
    // the first proxy's state dir: its credential-sync identity unseals the profile's API key
    const { daemon } = await start(t.cp, t.dir, [], { SVC_PROXY_CA_FILE: tls.caFile, SVC_RUNTIME_SOCKET_PATH: join(dir2, "p.sock"), SVC_PROXY_AUDIT: join(dir2, "spool") });
    try {
      await waitReady(join(dir2, "p.sock"));
      const r = await fetch("http://localhost/v1/chat/completions", {
        unix: join(dir2, "p.sock"),
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "x-svc-user-id": "fe-alice" },
        body: JSON.stringify({ stream: true, messages: [{ role: "user", content: "hi" }] }),
      } as RequestInit);
      const reader = r.body!.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toStartWith("data: ");
      // The upstream still stalls: without the deadline this never resolves (the test times out).
      expect(await daemon.shutdown(200)).toBe(0);
      await reader.read().catch(() => null); // the stream was cut
    } finally {
      gate.resolve();
      await daemon.shutdown(0);
      await upstream.stop(true);
      t.cp.setBundle({ model_profile: previous });
      rmSync(dir2, { recursive: true, force: true });
    }
  }, 20_000);
});

describe("a second proxy on the same socket", () => {
  test("is refused before it touches the running proxy's audit spool", async () => {
    for (let i = 0; i < 400 && t.daemon.spool.depth > 0; i++) await Bun.sleep(10);
    const segments = () => [...new Bun.Glob("seg-*").scanSync(join(t.dir, "spool"))].sort();
    const before = segments();
    expect(before.some((n) => n.endsWith(".jsonl"))).toBe(true); // the running proxy's active segment, fully acknowledged
    await expect(start(t.cp, t.dir, [])).rejects.toThrow(/another proxy is already serving/);
    expect(segments()).toEqual(before);
    const d = await decide("crm.read", "fe-alice");
    expect(d.decision).toBe("permit");
    expect((await shipped(d.record_id)).id).toBe(d.record_id);
  });
});

describe("a second proxy on the same audit spool directory", () => {
  test("is refused, naming the directory and the holder, even on another socket; the first keeps working", async () => {
    const spoolDir = join(t.dir, "spool");
    const segments = () => [...new Bun.Glob("*").scanSync(spoolDir)].sort();
    for (let i = 0; i < 400 && t.daemon.spool.depth > 0; i++) await Bun.sleep(10);
    const before = segments();
    expect(before).toContain("proxy.lock");
    const dir2 = mkdtempSync(join(tmpdir(), "svc-proxyd-lock-"));
    try {
      await expect(start(t.cp, dir2, [], { SVC_PROXY_AUDIT: spoolDir })).rejects.toThrow(`SVC_PROXY_AUDIT "${spoolDir}" is in use by another proxy (pid ${process.pid}`);
      expect(segments()).toEqual(before);
      expect(existsSync(join(dir2, "p.sock"))).toBe(false);
      const d = await decide("crm.read", "fe-alice");
      expect((await shipped(d.record_id)).id).toBe(d.record_id);
    } finally {
      rmSync(dir2, { recursive: true, force: true });
    }
  });
});

describe("the egress proxy's password", () => {
  test("never appears in the logs, /readyz or /v1/policy; the redacted URL does", async () => {
    const dir2 = mkdtempSync(join(tmpdir(), "svc-proxyd-egress-"));
    const logs: string[] = [];
    // Nothing listens on port 1: every control-plane call fails through the egress proxy.
    const { daemon } = await start(t.cp, dir2, logs, { SVC_PROXY_EGRESS_PROXY: "http://alice:s3cret@127.0.0.1:1" });
    try {
      await daemon.loop.pollNow();
      const ready = await (await fetch("http://localhost/readyz", { unix: join(dir2, "p.sock") } as RequestInit)).json();
      const policy = await (await fetch("http://localhost/v1/policy", { unix: join(dir2, "p.sock"), headers: { authorization: `Bearer ${TOKEN}` } } as RequestInit)).json();
      expect(ready.reason).toContain("through the egress proxy http://alice:***@127.0.0.1:1");
      const everything = [...logs, JSON.stringify(ready), JSON.stringify(policy)].join("\n");
      expect(everything).toContain('"egress_proxy":"http://alice:***@127.0.0.1:1"');
      expect(everything).not.toContain("s3cret");
    } finally {
      await daemon.shutdown(200);
      rmSync(dir2, { recursive: true, force: true });
    }
  });
});

describe("the control plane refuses the credential", () => {
  const stateFile = (name: string) => join(t.dir, "state", name);
  const readyz = async (socket = t.socket) => {
    const r = await fetch("http://localhost/readyz", { unix: socket } as RequestInit);
    return { status: r.status, body: (await r.json()) as { ready: boolean; state: string; reason: string | null } };
  };

  test("429 keeps deciding on the last good bundle (stale); another 4xx stops decisions but keeps the bundle", async () => {
    t.cp.refuseWith = 429;
    await t.daemon.loop.pollNow();
    expect((await readyz()).body.state).toBe("stale");
    expect((await decide("crm.read", "fe-alice")).decision).toBe("permit");
    t.cp.refuseWith = 400;
    await t.daemon.loop.pollNow();
    const r = await readyz();
    expect(r.status).toBe(503);
    expect(r.body.state).toBe("unavailable");
    expect((await call("/v1/tools/decide", { body: { tool: "crm.read", user: { id: "fe-alice" }, args: {} } })).status).toBe(503);
    expect(existsSync(stateFile("last-good-bundle.json"))).toBe(true);
    t.cp.refuseWith = null;
    await t.daemon.loop.pollNow();
    expect((await readyz()).body.state).toBe("ready");
  });

  test("token rotated (401): bundle, digest key and persisted state forgotten, every decision refused, one log line; records stay spooled; the same token working again recovers", async () => {
    expect(existsSync(stateFile("bootstrap.json"))).toBe(true);
    expect(existsSync(stateFile("last-good-bundle.json"))).toBe(true);
    t.cp.refuseWith = 401; // rotated; the proxy has not noticed yet
    const d = await decide("crm.read", "fe-alice");
    expect(d.decision).toBe("permit");
    await t.daemon.loop.pollNow();
    await t.daemon.loop.pollNow();
    await t.daemon.heartbeat.beat();
    const r = await readyz();
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ ready: false, state: "unavailable" });
    expect(r.body.reason).toContain("401");
    expect(r.body.reason).toContain("rotated");
    expect(t.daemon.status.compiled).toBeNull();
    expect(t.daemon.status.digestKey).toBeNull();
    expect(existsSync(stateFile("bootstrap.json"))).toBe(false);
    expect(existsSync(stateFile("last-good-bundle.json"))).toBe(false);
    const refused = await call("/v1/tools/decide", { body: { tool: "crm.read", user: { id: "fe-alice" }, args: {} } });
    expect(refused.status).toBe(503);
    expect((await refused.json()).error.code).toBe("governance_unavailable");
    expect((await call("/v1/chat/completions", { user: "fe-alice", body: { messages: [] } })).status).toBe(503);
    expect((await (await call("/v1/models", { user: "fe-alice" })).json()).data).toEqual([]);
    expect((await (await call("/v1/policy")).json()).state).toBe("unavailable");
    expect(t.logs.filter((l) => l.includes("runtime credential refused"))).toHaveLength(1);
    expect(t.cp.audit.has(d.record_id)).toBe(false);
    expect(t.daemon.spool.depth).toBeGreaterThanOrEqual(1); // kept, never dropped
    expect(existsSync(join(t.dir, "spool", "rejected.jsonl"))).toBe(false);
    t.cp.refuseWith = null;
    const bootstraps = t.cp.bootstraps.length;
    await t.daemon.loop.pollNow();
    expect(t.cp.bootstraps.length).toBe(bootstraps + 1);
    expect((await readyz()).body.state).toBe("ready");
    expect(existsSync(stateFile("bootstrap.json"))).toBe(true);
    expect((await shipped(d.record_id)).id).toBe(d.record_id);
  });

  test("installation deleted (404 on the bundle): refused like a rotated token", async () => {
    t.cp.refuseWith = 404;
    await t.daemon.loop.pollNow();
    const r = await readyz();
    expect(r.status).toBe(503);
    expect(r.body.reason).toContain("deleted");
    expect(existsSync(stateFile("last-good-bundle.json"))).toBe(false);
    t.cp.refuseWith = null;
    await t.daemon.loop.pollNow();
    expect((await readyz()).body.state).toBe("ready");
  });

  test("restart after rotation: the persisted bundle is not decided on; the start is fatal (exit non-zero)", async () => {
    expect(existsSync(stateFile("last-good-bundle.json"))).toBe(true);
    const dir2 = mkdtempSync(join(tmpdir(), "svc-proxyd3-"));
    const logs: string[] = [];
    t.cp.refuseWith = 401;
    const { daemon } = await start(t.cp, t.dir, logs, { SVC_RUNTIME_SOCKET_PATH: join(dir2, "p3.sock"), SVC_PROXY_AUDIT: join(dir2, "spool") });
    try {
      const cause = await Promise.race([daemon.fatal, Bun.sleep(5000).then(() => "no fatal")]);
      expect(cause).toContain("401");
      const r = await readyz(join(dir2, "p3.sock"));
      expect(r.status).toBe(503);
      expect(r.body.reason).toStartWith("runtime bootstrap failed: ");
      const d = await fetch("http://localhost/v1/tools/decide", {
        unix: join(dir2, "p3.sock"),
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ tool: "crm.read", user: { id: "fe-alice" }, args: {} }),
      } as RequestInit);
      expect(d.status).toBe(503);
      expect(existsSync(stateFile("bootstrap.json"))).toBe(false);
      expect(existsSync(stateFile("last-good-bundle.json"))).toBe(false);
      expect(logs.filter((l) => l.includes("runtime credential refused"))).toHaveLength(1);
    } finally {
      t.cp.refuseWith = null;
      await daemon.shutdown(500);
      rmSync(dir2, { recursive: true, force: true });
    }
  });
});
