// SIEM sinks (issue 15), the webhook kind: admin routes (validation naming the field, the secret
// write-only), and delivery to a real HTTPS receiver: Splunk-HEC lines signed with HMAC-SHA256,
// record ids as event ids, ciphertext only when configured, and a receiver outage that loses
// nothing (records ingested while it is down all arrive once it is back, ids unchanged).
import { afterEach, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import type { Server } from "bun";
import { testTls } from "../../../test/support/tls.ts";
import { addInstallation, auditRecord, type Installation } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { ecsProblems, ocsfProblems } from "../../../test/support/siem-schemas/validate.ts";
import { backoffMs, deliverDue, releaseLeases } from "./deliver.ts";

const SECRET = "a-webhook-hmac-secret-of-some-length";

type Received = { body: string; signature: string | null; events: any[] };

/** A Splunk-HEC-like HTTPS receiver on 127.0.0.1: keeps what it gets; answers 503 while `failing`. */
function receiver(port = 0) {
  const tls = testTls();
  const got: Received[] = [];
  const state = { failing: false };
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port,
    tls: { cert: tls.cert, key: tls.key },
    async fetch(req) {
      const body = await req.text();
      if (state.failing) return new Response("indexer busy", { status: 503 });
      got.push({ body, signature: req.headers.get("x-svc-signature"), events: body.split("\n").map((l) => JSON.parse(l)) });
      return Response.json({ text: "Success", code: 0 });
    },
  });
  return {
    server,
    got,
    state,
    url: `https://127.0.0.1:${server.port}/services/collector/event`,
    port: server.port!,
    ca: tls.ca,
    ids: () => got.flatMap((g) => g.events.filter((e) => e.event.kind !== "admin").map((e) => e.event.id as string)),
    actions: () => got.flatMap((g) => g.events.filter((e) => e.event.kind === "admin").map((e) => e.event.action as string)),
  };
}

const servers: Server<undefined>[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop(true);
});

async function ship(cp: TestControlPlane, inst: Installation, n: number, over: Parameters<typeof auditRecord>[1] = {}) {
  const records = Array.from({ length: n }, () => auditRecord(inst, over));
  const r = await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } });
  expect(r.json.inserted).toBe(n);
  return records.map((x) => x.id);
}

const opts = { owner: "test-replica", settleMs: 0, batchSize: 4 };

describe("webhook sinks: admin routes", () => {
  test("create validates each field by name, keeps the secret write-only, lists and deletes", async () => {
    const cp = await testControlPlane();
    const rx = receiver();
    servers.push(rx.server);
    const create = async (body: Record<string, unknown>) => cp.call("POST", cp.org("/siem-sinks"), { body });
    const ok = { name: "splunk", kind: "webhook", endpoint: rx.url, secret: SECRET, ca_pem: rx.ca };
    const bad: [Record<string, unknown>, string][] = [
      [{ ...ok, secret: undefined }, "/secret"],
      [{ ...ok, secret: "short" }, "/secret"],
      [{ ...ok, endpoint: "http://siem.example.com/hec" }, "/endpoint"],
      [{ ...ok, endpoint: "not a url" }, "/endpoint"],
      [{ ...ok, endpoint: "https://user:pw@siem.example.com/" }, "/endpoint"],
      [{ ...ok, ca_pem: "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n" }, "/ca_pem"],
      [{ ...ok, name: "   " }, "/name"],
      [{ ...ok, kind: "syslog", endpoint: "siem.example.com", secret: undefined }, "/endpoint"],
      [{ ...ok, kind: "syslog", endpoint: "siem.example.com:6514" }, "/secret"],
      [{ ...ok, server_name: "x.example.com" }, "/server_name"],
      [{ ...ok, format: "cef" }, "/format"],
    ];
    for (const [body, path] of bad) {
      const r = await create(body);
      expect(r.status, `${path} ${JSON.stringify(body).slice(0, 80)}`).toBe(422);
      expect(JSON.stringify(r.json)).toContain(path.slice(1));
    }
    expect((await create({ ...ok, kind: "kafka" })).status).toBe(422);
    expect((await create({ ...ok, extra: 1 })).status).toBe(422);
    const made = await create(ok);
    expect(made.status).toBe(201);
    // (its lag: the admin event of its own creation, the first record it will deliver)
    expect(made.json).toMatchObject({
      name: "splunk",
      kind: "webhook",
      endpoint: rx.url,
      secret_set: true,
      ca_pem_set: true,
      include_ciphertext: false,
      health: { status: "pending", lag_records: 1 },
    });
    expect(made.text).not.toContain(SECRET);
    expect((await create(ok)).status).toBe(409);
    // Private addresses are refused unless the operator allows them.
    const strict = await testControlPlane({ config: { allowPrivateOutbound: false } });
    const refused = await strict.call("POST", strict.org("/siem-sinks"), { body: ok });
    expect(refused.status).toBe(422);
    expect(refused.json.code).toBe("outbound_url_refused");
    // The demo's opt-in lets a receiver on loopback through, and nothing else private.
    const demo = await testControlPlane({ config: { allowPrivateOutbound: false, allowLoopbackSinks: true } });
    expect((await demo.call("POST", demo.org("/siem-sinks"), { body: ok })).status).toBe(201);
    const privateRx = await demo.call("POST", demo.org("/siem-sinks"), { body: { ...ok, name: "lan", endpoint: "https://10.1.2.3:8088/services/collector/event" } });
    expect([privateRx.status, privateRx.json.code]).toEqual([422, "outbound_url_refused"]);
    const list = await cp.call("GET", cp.org("/siem-sinks"));
    expect(list.json.sinks.map((s: { name: string }) => s.name)).toEqual(["splunk"]);
    expect(list.text).not.toContain(SECRET);
    expect((await cp.call("DELETE", cp.org("/siem-sinks/nope"))).status).toBe(404);
    expect((await cp.call("DELETE", cp.org("/siem-sinks/splunk"))).json).toEqual({ deleted: made.json.id, name: "splunk" });
    expect((await cp.call("GET", cp.org("/siem-sinks"))).json.sinks).toEqual([]);
  });
});

describe("webhook sinks: delivery", () => {
  test("HEC lines signed with HMAC-SHA256 over the body, record ids as event ids, in ingest order, digest-only unless configured", async () => {
    const cp = await testControlPlane();
    const rx = receiver();
    servers.push(rx.server);
    const inst = await addInstallation(cp);
    const before = await ship(cp, inst, 2, { ciphertext: Buffer.from("age-ciphertext-bytes").toString("base64"), recipient_key_ids: ["key_X"] });
    const base = { kind: "webhook", endpoint: rx.url, secret: SECRET, ca_pem: rx.ca };
    expect((await cp.call("POST", cp.org("/siem-sinks"), { body: { ...base, name: "new-only" } })).status).toBe(201);
    expect((await cp.call("POST", cp.org("/siem-sinks"), { body: { ...base, name: "all-with-ct", backfill: true, include_ciphertext: true } })).status).toBe(201);
    const after = await ship(cp, inst, 5, { ciphertext: Buffer.from("age-ciphertext-bytes").toString("base64"), recipient_key_ids: ["key_X"] });
    // Admin events go to sinks too: the backfill gets every one, new-only the two sinks' creations.
    const admin = ((await cp.call("GET", cp.org("/audit-records?kind=admin"))).json.records as { id: string }[]).length;
    expect(await deliverDue(cp.deps, opts)).toBe(5 + 7 + admin + 2);
    for (const g of rx.got) expect(g.signature).toBe(`sha256=${createHmac("sha256", SECRET).update(g.body).digest("hex")}`);
    const events = rx.got.flatMap((g) => g.events);
    for (const e of events) {
      expect(e.sourcetype).toBe("svc:audit");
      expect(e.time).toBe(Date.parse(e.event.ts) / 1000);
      // admin events have no ciphertext; their severity is an indexed field
      if (e.event.kind === "admin") expect(e.fields.severity).toMatch(/^(info|notice|high)$/);
      else expect(e.event.ciphertext_sha256).toMatch(/^[0-9a-f]{64}$/);
    }
    const decisions = events.filter((e) => e.event.kind !== "admin");
    const withCt = decisions.filter((e) => "ciphertext" in e.event);
    expect(withCt.map((e) => e.event.id)).toEqual([...before, ...after]);
    expect(Buffer.from(withCt[0].event.ciphertext, "base64").toString()).toBe("age-ciphertext-bytes");
    expect(decisions.filter((e) => !("ciphertext" in e.event)).map((e) => e.event.id)).toEqual(after);
    expect(events.filter((e) => e.event.kind === "admin").map((e) => e.event.action)).toContain("siem_sink.create");
    // Nothing new: nothing sent; the list shows both healthy with no lag.
    expect(await deliverDue(cp.deps, opts)).toBe(0);
    const sinks = (await cp.call("GET", cp.org("/siem-sinks"))).json.sinks;
    expect(sinks.map((s: any) => [s.name, s.health.status, s.health.delivered, s.health.lag_records])).toEqual([
      ["all-with-ct", "ok", 7 + admin, 0],
      ["new-only", "ok", 5 + 2, 0],
    ]);
  });

  test("OCSF and ECS sinks: each record as an event of the schema (validated), the record whole inside, ciphertext only when configured", async () => {
    const cp = await testControlPlane();
    const rx = receiver();
    servers.push(rx.server);
    const inst = await addInstallation(cp);
    const base = { kind: "webhook", endpoint: rx.url, secret: SECRET, ca_pem: rx.ca, backfill: true };
    const ocsf = await cp.call("POST", cp.org("/siem-sinks"), { body: { ...base, name: "lake", format: "ocsf" } });
    expect([ocsf.status, ocsf.json.format]).toEqual([201, "ocsf"]);
    expect((await cp.call("POST", cp.org("/siem-sinks"), { body: { ...base, name: "elastic", format: "ecs", include_ciphertext: true } })).json.format).toBe("ecs");
    const ids = await ship(cp, inst, 3, { decision: "deny", ciphertext: Buffer.from("age-ciphertext-bytes").toString("base64"), recipient_key_ids: ["key_X"] });
    const admin = ((await cp.call("GET", cp.org("/audit-records?kind=admin"))).json.records as unknown[]).length;
    expect(await deliverDue(cp.deps, opts)).toBe(2 * (3 + admin));
    const events = rx.got.flatMap((g) => g.events);
    const lake = events.filter((e) => e.sourcetype === "svc:audit:ocsf");
    const elastic = events.filter((e) => e.sourcetype === "svc:audit:ecs");
    expect([lake.length, elastic.length]).toEqual([3 + admin, 3 + admin]);
    for (const e of lake) expect(ocsfProblems(e.event)).toEqual([]);
    for (const e of elastic) expect(ecsProblems(e.event, ["svc"])).toEqual([]);
    const denies = lake.filter((e) => e.event.class_uid === 6003);
    expect(denies.map((e) => [e.event.metadata.uid, e.event.action_id, e.event.disposition_id])).toEqual(ids.map((id) => [id, 2, 2]));
    expect(lake.filter((e) => e.event.class_uid !== 6003).map((e) => e.fields.action)).toContain("siem_sink.create");
    // The ciphertext: in the raw record of the sink that asked for it only, never in a normalized field.
    expect(JSON.stringify(lake)).not.toContain(Buffer.from("age-ciphertext-bytes").toString("base64"));
    const withCt = elastic.filter((e) => e.event.event.action === "tool:crm.lookup");
    expect(withCt.map((e) => JSON.parse(e.event.event.original).ciphertext)).toEqual(ids.map(() => Buffer.from("age-ciphertext-bytes").toString("base64")));
    expect(withCt.map((e) => [e.event.event.id, e.event.event.outcome, e.event.svc.ciphertext_sha256.length])).toEqual(ids.map((id) => [id, "failure", 64]));
  });

  test("a receiver outage loses nothing: records ingested while it is down arrive once it is back, with the same ids", async () => {
    let clock = Date.now();
    const cp = await testControlPlane({ now: () => clock });
    const first = receiver();
    servers.push(first.server);
    const port = first.port;
    const inst = await addInstallation(cp);
    const made = await cp.call("POST", cp.org("/siem-sinks"), { body: { name: "siem", kind: "webhook", endpoint: first.url, secret: SECRET, ca_pem: first.ca } });
    expect(made.status).toBe(201);
    const early = await ship(cp, inst, 3);
    expect(await deliverDue(cp.deps, opts)).toBe(1 + 3);
    // The receiver goes away; records keep coming.
    await first.server.stop(true);
    servers.splice(servers.indexOf(first.server), 1);
    const during = [...(await ship(cp, inst, 6)), ...(await ship(cp, inst, 3))];
    expect(await deliverDue(cp.deps, opts)).toBe(0);
    let view = (await cp.call("GET", cp.org("/siem-sinks"))).json.sinks[0];
    expect(view.health).toMatchObject({ status: "failing", failures: 1, lag_records: 9, delivered: 4 });
    expect(view.health.last_error).toBeTruthy();
    expect(view.health.last_error).not.toContain(SECRET);
    // Backing off: not retried before its time, then retried (and failing again: the wait doubles).
    expect(await deliverDue(cp.deps, opts)).toBe(0);
    clock += backoffMs(1) + 1;
    expect(await deliverDue(cp.deps, opts)).toBe(0);
    view = (await cp.call("GET", cp.org("/siem-sinks"))).json.sinks[0];
    expect(view.health.failures).toBe(2);
    expect(Date.parse(view.health.next_attempt_at) - clock).toBe(backoffMs(2));
    // A restart: this replica's lease is released; another process (a new owner) picks the cursor up from the database.
    await releaseLeases(cp.deps, opts.owner);
    // A 503 from the receiver is a failure too: the batch it was sent stays unacknowledged.
    const back = receiver(port);
    servers.push(back.server);
    back.state.failing = true;
    clock += backoffMs(2) + 1;
    expect(await deliverDue(cp.deps, { ...opts, owner: "restarted-replica" })).toBe(0);
    back.state.failing = false;
    clock += backoffMs(3) + 1;
    expect(await deliverDue(cp.deps, { ...opts, owner: "restarted-replica" })).toBe(9);
    expect(first.actions()).toEqual(["siem_sink.create"]); // the sink's own creation, delivered with the first batch
    expect(first.ids()).toEqual(early);
    expect(back.ids()).toEqual(during);
    view = (await cp.call("GET", cp.org("/siem-sinks"))).json.sinks[0];
    expect(view.health).toMatchObject({ status: "ok", failures: 0, lag_records: 0, lag_seconds: 0, delivered: 13, last_error: expect.any(String) });
    expect(Date.parse(view.health.last_success_at)).toBe(clock);
  });

  test("one replica delivers a sink at a time: the lease holder; another takes over once the lease runs out", async () => {
    let clock = Date.now();
    const cp = await testControlPlane({ now: () => clock });
    const rx = receiver();
    servers.push(rx.server);
    const inst = await addInstallation(cp);
    await cp.call("POST", cp.org("/siem-sinks"), { body: { name: "siem", kind: "webhook", endpoint: rx.url, secret: SECRET, ca_pem: rx.ca } });
    const ids = await ship(cp, inst, 2);
    expect(await deliverDue(cp.deps, { ...opts, owner: "a", leaseMs: 60_000 })).toBe(1 + 2);
    const more = await ship(cp, inst, 2);
    expect(await deliverDue(cp.deps, { ...opts, owner: "b", leaseMs: 60_000 })).toBe(0);
    clock += 60_001;
    expect(await deliverDue(cp.deps, { ...opts, owner: "b", leaseMs: 60_000 })).toBe(2);
    expect(rx.ids()).toEqual([...ids, ...more]);
    expect(rx.actions()).toEqual(["siem_sink.create"]);
  });
});
