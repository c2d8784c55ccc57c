// A sink's event format changed after its creation (issue 35): the batches after the change are
// in the new format and nothing is sent twice or skipped; the change is admin-trailed with the
// sink before and after (its secret as a digest only); the same format is no event; a bad format
// or an unknown sink is a client error naming it; a member who is not an admin cannot.
import { afterAll, expect, test } from "bun:test";
import type { Server } from "bun";
import { testTls } from "../../../test/support/tls.ts";
import { ocsfProblems } from "../../../test/support/siem-schemas/validate.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { deliverDue } from "./deliver.ts";

const SECRET = "a-webhook-hmac-secret-of-some-length";
const tls = testTls();
const lines: any[] = [];
const rx: Server<undefined> = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  tls: { cert: tls.cert, key: tls.key },
  async fetch(req) {
    for (const l of (await req.text()).split("\n")) lines.push(JSON.parse(l));
    return Response.json({ text: "Success", code: 0 });
  },
});
afterAll(async () => rx.stop(true));

test("svc → ocsf from the next batch on, admin-trailed; the same format no event; bad input named", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const ship = async () => {
    const r = auditRecord(inst);
    expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [r] } })).json.inserted).toBe(1);
    return r.id;
  };
  const made = await cp.call("POST", cp.org("/siem-sinks"), { body: { name: "lake", kind: "webhook", endpoint: `https://127.0.0.1:${rx.port}/hec`, secret: SECRET, ca_pem: tls.ca } });
  expect([made.status, made.json.format]).toEqual([201, "svc"]);
  const first = await ship();
  await deliverDue(cp.deps, { owner: "t", settleMs: 0 });
  const svcEvents = lines.splice(0).map((l) => l.event);
  expect(svcEvents.map((e) => e.id)).toContain(first);

  const changed = await cp.call("PATCH", cp.org("/siem-sinks/lake"), { body: { format: "ocsf" } });
  expect([changed.status, changed.json.format, changed.json.id]).toEqual([200, "ocsf", made.json.id]);
  expect(changed.text).not.toContain(SECRET);
  expect((await cp.call("GET", cp.org("/siem-sinks"))).json.sinks[0].format).toBe("ocsf");
  const second = await ship();
  await deliverDue(cp.deps, { owner: "t", settleMs: 0 });
  const after = lines.splice(0);
  expect(after.every((l) => l.sourcetype === "svc:audit:ocsf")).toBe(true);
  const decision = after.map((l) => l.event).find((e) => JSON.stringify(e).includes(second));
  expect(decision).toBeDefined();
  for (const l of after) expect(ocsfProblems(l.event)).toEqual([]);
  expect(JSON.stringify(after)).not.toContain(first); // nothing sent twice

  // admin-trailed: before and after, the secret as a digest only
  const trail = (await cp.call("GET", cp.org("/audit-records?kind=admin"))).json.records as any[];
  const updates = trail.filter((r) => r.action === "siem_sink.update");
  expect(updates).toHaveLength(1);
  expect(JSON.stringify(updates[0])).toContain('"format":"ocsf"');
  expect(JSON.stringify(updates[0])).not.toContain(SECRET);
  // the same format: no change, no event; back to svc is one
  expect((await cp.call("PATCH", cp.org(`/siem-sinks/${made.json.id}`), { body: { format: "ocsf" } })).status).toBe(200);
  expect((await cp.call("PATCH", cp.org("/siem-sinks/lake"), { body: { format: "svc" } })).json.format).toBe("svc");
  const trail2 = (await cp.call("GET", cp.org("/audit-records?kind=admin"))).json.records as any[];
  expect(trail2.filter((r) => r.action === "siem_sink.update")).toHaveLength(2);

  // client errors, named; nothing changed
  const bad = await cp.call("PATCH", cp.org("/siem-sinks/lake"), { body: { format: "cef" } });
  expect(bad.status).toBe(422);
  expect(bad.text).toContain("format");
  expect((await cp.call("PATCH", cp.org("/siem-sinks/lake"), { body: { format: "ecs", endpoint: "https://elsewhere.example.com/" } })).status).toBe(422);
  const missing = await cp.call("PATCH", cp.org("/siem-sinks/nope"), { body: { format: "ecs" } });
  expect([missing.status, missing.json.code]).toEqual([404, "not_found"]);
  expect((await cp.call("GET", cp.org("/siem-sinks"))).json.sinks[0].format).toBe("svc");
});
