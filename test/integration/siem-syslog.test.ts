// SIEM sinks (issue 15), the syslog kind, against a real rsyslog from Debian (imtcp over TLS
// with the gtls driver, test/support/rsyslog.ts): RFC 5424 messages in RFC 5425 octet-counting
// frames that rsyslog parses into the right PRI, timestamp, app, msgid and structured data,
// the record (or its ECS document) as the message; a receiver outage loses nothing; an untrusted certificate is refused.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { makeRsyslog, type Rsyslog } from "../support/rsyslog.ts";
import { ecsProblems } from "../support/siem-schemas/validate.ts";
import { waitFor } from "../support/controlplane-process.ts";
import { testTls } from "../support/tls.ts";
import { addInstallation, auditRecord, type Installation } from "../../src/controlplane/runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../../src/controlplane/testing.ts";
import { backoffMs, deliverDue } from "../../src/controlplane/sinks/deliver.ts";

let rsyslog: Rsyslog;
beforeAll(async () => {
  rsyslog = makeRsyslog();
  await rsyslog.start();
});
afterAll(async () => {
  await rsyslog?.stop();
  rsyslog?.cleanup();
});

async function ship(cp: TestControlPlane, inst: Installation, n: number, over: Parameters<typeof auditRecord>[1] = {}) {
  const records = Array.from({ length: n }, () => auditRecord(inst, over));
  const r = await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } });
  expect(r.json.inserted).toBe(n);
  return records.map((x) => x.id);
}

const opts = { owner: "test", settleMs: 0, batchSize: 3 };
const bodyOf = (msg: string) => JSON.parse(msg.replace(/^\uFEFF/, ""));

describe("syslog sinks (real rsyslog over TLS)", () => {
  test("rsyslog parses each record as RFC 5424 with the record id in structured data; an outage loses nothing", async () => {
    let clock = Date.now();
    const cp = await testControlPlane({ now: () => clock });
    const inst = await addInstallation(cp);
    const made = await cp.call("POST", cp.org("/siem-sinks"), { body: { name: "rsyslog", kind: "syslog", endpoint: `127.0.0.1:${rsyslog.port}`, ca_pem: testTls().ca } });
    expect(made.status).toBe(201);
    const first = [...(await ship(cp, inst, 2)), ...(await ship(cp, inst, 2, { decision: "deny", reason: 'policy "no-crm" denies it ]' }))];
    expect(await deliverDue(cp.deps, opts)).toBe(1 + 4);
    await waitFor(() => rsyslog.lines().length >= 5, "5 messages in rsyslog's output");
    // the admin event of the sink's own creation comes with them (after the runtime records: chains are read store first)
    const lines = rsyslog.lines().filter((l) => l.msgid !== "admin");
    const created = rsyslog.lines().find((l) => l.msgid === "admin");
    // The admin event: its own severity (notice, 5), and who made it in the structured data.
    expect(created!.pri).toBe(13 * 8 + 5);
    expect(created!.msgid).toBe("admin");
    expect(created!.sd).toContain(`kind="admin" decision="permit" action="siem_sink.create"`);
    expect(created!.sd).toContain(`actor="owner@example.com" target="siem_sink:${made.json.id}" result="ok" severity="notice"`);
    expect(bodyOf(created!.msg).admin.actor.id).toBe(cp.accountId);
    expect(lines.map((l) => bodyOf(l.msg).id)).toEqual(first);
    for (const [i, l] of lines.entries()) {
      const rec = bodyOf(l.msg);
      expect(l.pri).toBe(i < 2 ? 13 * 8 + 6 : 13 * 8 + 4);
      expect(l.app).toBe("svc");
      expect(l.msgid).toBe("tool");
      expect(Date.parse(l.ts)).toBe(Date.parse(rec.ts));
      expect(l.sd).toStartWith(`[svc@32473 id="${rec.id}" org="${cp.orgId}" kind="tool" decision="${rec.decision}"`);
      expect(rec).not.toHaveProperty("ciphertext");
    }
    // rsyslog down; records keep coming; nothing is lost once it is back.
    await rsyslog.stop();
    const during = [...(await ship(cp, inst, 4)), ...(await ship(cp, inst, 1))];
    expect(await deliverDue(cp.deps, opts)).toBe(0);
    const failing = (await cp.call("GET", cp.org("/siem-sinks"))).json.sinks[0];
    expect(failing.health).toMatchObject({ status: "failing", lag_records: 5, delivered: 5 });
    await rsyslog.start();
    clock += backoffMs(1) + 1;
    expect(await deliverDue(cp.deps, opts)).toBe(5);
    await waitFor(() => rsyslog.lines().length >= 10, "10 messages in rsyslog's output");
    expect(
      rsyslog
        .lines()
        .filter((l) => l.msgid !== "admin")
        .map((l) => bodyOf(l.msg).id),
    ).toEqual([...first, ...during]);
    expect((await cp.call("GET", cp.org("/siem-sinks"))).json.sinks[0].health).toMatchObject({ status: "ok", lag_records: 0, delivered: 10 });
  });

  test("format ecs: rsyslog parses the same header and structured data, the message an ECS document of the field reference", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const before = rsyslog.lines().length;
    expect((await cp.call("POST", cp.org("/siem-sinks"), { body: { name: "elastic", kind: "syslog", endpoint: `127.0.0.1:${rsyslog.port}`, ca_pem: testTls().ca, format: "ecs" } })).json.format).toBe(
      "ecs",
    );
    const [id] = await ship(cp, inst, 1, { decision: "deny", reason: "no" });
    expect(await deliverDue(cp.deps, opts)).toBe(1 + 1);
    await waitFor(() => rsyslog.lines().length >= before + 2, "2 more messages in rsyslog's output");
    const [deny, created] = rsyslog.lines().slice(before);
    expect([deny!.pri, deny!.msgid, created!.msgid]).toEqual([13 * 8 + 4, "tool", "admin"]);
    expect(deny!.sd).toStartWith(`[svc@32473 id="${id}" org="${cp.orgId}" kind="tool" decision="deny"`);
    for (const l of [deny!, created!]) expect(ecsProblems(bodyOf(l.msg), ["svc"])).toEqual([]);
    expect(bodyOf(deny!.msg)).toMatchObject({ event: { id, outcome: "failure", category: ["api"], type: ["access", "denied"] } });
    expect(bodyOf(created!.msg)).toMatchObject({ event: { action: "siem_sink.create", category: ["configuration"], type: ["creation"] }, user: { id: cp.accountId } });
  });

  test("a receiver whose certificate the sink does not trust gets nothing; the error says why", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const before = rsyslog.lines().length;
    expect((await cp.call("POST", cp.org("/siem-sinks"), { body: { name: "untrusted", kind: "syslog", endpoint: `127.0.0.1:${rsyslog.port}` } })).status).toBe(201);
    await ship(cp, inst, 1);
    expect(await deliverDue(cp.deps, opts)).toBe(0);
    const sink = (await cp.call("GET", cp.org("/siem-sinks"))).json.sinks[0];
    expect(sink.health.status).toBe("failing");
    expect(sink.health.last_error).toMatch(/certificate/i);
    expect(rsyslog.lines().length).toBe(before);
  });
});
