// The bodies each kind of sink sends (pure): HEC lines, RFC 5424 messages with escaped
// structured data in octet-counting frames whose counts are bytes, OTLP severities.
import { describe, expect, test } from "bun:test";
import type { StreamedRecord } from "../audit/ingest-order.ts";
import { backoffMs } from "./deliver.ts";
import { ecsProblems, ocsfProblems } from "../../../test/support/siem-schemas/validate.ts";
import { hecBody, otlpLogsRequest, signature, syslogFrames, syslogMessage } from "./format.ts";

const rec = (over: Partial<StreamedRecord> = {}): StreamedRecord =>
  ({
    id: "rec_01TEST",
    ts: "2026-11-25T17:00:00.123Z",
    received_at: "2026-11-25T17:00:01.000Z",
    kind: "tool",
    organization_id: "org_1",
    installation_id: "inst_1",
    action: "tool:crm.read",
    tool_name: "crm.read",
    decision: "permit",
    policy_id: null,
    subject: { user_id: "usr_1", email: "ada@example.com", remote_user_id: "fe", via_installation: false },
    ciphertext_sha256: null,
    ...over,
  }) as StreamedRecord;

describe("sink bodies", () => {
  test("HEC: one event per line, time in seconds, sourcetype svc:audit; the signature is the HMAC of the body", () => {
    const body = hecBody([rec(), rec({ id: "rec_02" })], "cp-1");
    const lines = body.split("\n").map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.time, l.sourcetype, l.host, l.event.id])).toEqual([
      [1795626000.123, "svc:audit", "cp-1", "rec_01TEST"],
      [1795626000.123, "svc:audit", "cp-1", "rec_02"],
    ]);
    expect(signature("k".repeat(16), body)).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(signature("k".repeat(16), body)).not.toBe(signature("k".repeat(16), `${body} `));
  });

  test("syslog: PRI by decision, structured data escaped, frames counted in bytes", () => {
    const deny = rec({ decision: "deny", tool_name: 'we"ird]to\\ol', subject: { user_id: "usr_1", email: "zoë@example.com", remote_user_id: "fe", via_installation: false } });
    const msg = syslogMessage(deny, "cp 1");
    expect(msg).toStartWith(
      '<108>1 2026-11-25T17:00:00.123Z cp_1 svc - tool [svc@32473 id="rec_01TEST" org="org_1" kind="tool" decision="deny" action="tool:crm.read" tool="we\\"ird\\]to\\\\ol" user="zoë@example.com"] \uFEFF{',
    );
    expect(syslogMessage(rec({ decision: "ask" }), "h")).toStartWith("<109>1 ");
    const frames = syslogFrames([deny, rec()], "h").toString("utf8");
    const m = /^(\d+) /.exec(frames)!;
    const first = Buffer.from(frames, "utf8")
      .subarray(m[0].length, m[0].length + Number(m[1]))
      .toString("utf8");
    expect(first).toBe(syslogMessage(deny, "h"));
    expect(Buffer.byteLength(first)).toBeGreaterThan(first.length); // ë, the BOM: bytes, not characters
  });

  test("OTLP: severity by decision, nanosecond times as strings, the record as body", () => {
    const req = otlpLogsRequest([rec({ decision: "deny" }), rec()], "h");
    const [a, b] = req.resourceLogs[0]!.scopeLogs[0]!.logRecords;
    expect([a!.severityNumber, a!.severityText, b!.severityNumber]).toEqual([13, "WARN", 9]);
    expect(a!.timeUnixNano).toBe("1795626000123000000");
    expect(JSON.parse(a!.body.stringValue).id).toBe("rec_01TEST");
  });

  test("OCSF and ECS formats: the same envelope (PRI, structured data, severity), the event of the schema inside", () => {
    const deny = rec({
      decision: "deny",
      harness: "chatui",
      workspace_id: "ws_1",
      agent_id: "agt_1",
      replica_id: null,
      reason: "no",
      policy_revision: 1,
      encryption: { mode: "digest-only" },
    } as Partial<StreamedRecord>);
    const msg = syslogMessage(deny, "h", "ocsf");
    expect(msg).toStartWith('<108>1 2026-11-25T17:00:00.123Z h svc - tool [svc@32473 id="rec_01TEST" ');
    const ocsf = JSON.parse(msg.slice(msg.indexOf("\uFEFF") + 1));
    expect([ocsf.class_uid, ocsf.action_id, ocsf.metadata.uid, ocsfProblems(ocsf)]).toEqual([6003, 2, "rec_01TEST", []]);
    const [log] = otlpLogsRequest([deny], "h", "ecs").resourceLogs[0]!.scopeLogs[0]!.logRecords;
    expect([log!.severityNumber, log!.eventName]).toEqual([13, "svc:audit:ecs"]);
    const ecs = JSON.parse(log!.body.stringValue);
    expect([ecs.event.id, ecs.event.outcome, ecsProblems(ecs, ["svc"])]).toEqual(["rec_01TEST", "failure", []]);
    expect(JSON.parse(hecBody([deny], "h", "ocsf")).sourcetype).toBe("svc:audit:ocsf");
  });

  test("backoff doubles from 1 s and stops at 5 minutes", () => {
    expect([1, 2, 3, 4, 9, 10, 50].map((n) => backoffMs(n))).toEqual([1000, 2000, 4000, 8000, 256_000, 300_000, 300_000]);
  });
});
