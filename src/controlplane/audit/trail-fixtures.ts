// Test support for the admin trail (issue 27): a control plane whose requests come from a known
// address and user agent, `step` (run one admin action, then find exactly the events it wrote,
// naming the expected actor), a registry of the raw secrets a test used, and `scanForSecrets`,
// which looks for each of them in every stored column of every audit record, in the export
// (JSON lines, CSV, OCSF, ECS) and in what every SIEM sink kind and format would send; every
// record it streams is also checked against the vendored OCSF and ECS schemas. Used by *.test.ts files only.
import { expect } from "bun:test";
import type { AuditRecordView } from "../../contract/admin-api.ts";
import type { AdminAction, AdminActor } from "../../contract/admin-event.ts";
import { ecsProblems, ocsfProblems } from "../../../test/support/siem-schemas/validate.ts";
import { tables } from "../db/index.ts";
import { hecBody, otlpLogsRequest, syslogFrames } from "../sinks/format.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { ecsDocument } from "./ecs.ts";
import { chainRecordsAfter, legacyRecordsAfter, type StreamedRecord } from "./ingest-order.ts";
import { ocsfEvent } from "./ocsf.ts";

export const IP = "198.51.100.7";
export const UA = "admin-trail-test/1.0 (+svc)";
/** The request headers of the person acting: the address (X-Forwarded-For, trusted here) and the browser. */
export const FROM = { "x-forwarded-for": IP, "user-agent": UA };

/** The admin actions about people and their credentials: admin-trail-people.test.ts drives exactly these, admin-trail-resources.test.ts the rest. */
export const PEOPLE_ACTIONS: readonly AdminAction[] = [
  "organization.bootstrap",
  "workspace.create",
  "member.add",
  "member.role_change",
  "member.remove",
  "api_token.create",
  "api_token.revoke",
  "session.sign_in",
  "session.sign_out",
  "session.sign_in_failed",
  "session.locked_out",
  "login_request.approve",
  "user.create",
  "user.disable",
  "user.enable",
  "remote_identity.link",
  "remote_identity.unlink",
  "remote_identity.claim",
  "group.create",
  "group.member_add",
  "group.member_remove",
  "invite.create",
  "invite.accept",
  "sso.configure",
  "sso.remove",
];

export type Event = AuditRecordView & { admin: NonNullable<AuditRecordView["admin"]> };

/** Every record of the organization as a backfilling SIEM sink streams them: legacy rows, then the store and admin chains. */
export async function everyStreamed(cp: TestControlPlane, withCiphertext: boolean): Promise<StreamedRecord[]> {
  const o = { limit: 100_000, withCiphertext };
  const legacy = await legacyRecordsAfter(cp.deps.db, cp.orgId, { receivedAt: 0, id: "" }, { ...o, settledBefore: Number.MAX_SAFE_INTEGER });
  const chained = await chainRecordsAfter(cp.deps.db, cp.orgId, { store: 0, admin: 0 }, o);
  return [...legacy.records, ...chained.records];
}

export async function trailWorld() {
  let clock = Date.now();
  // Every read of the clock moves it a little: ids and windows stay ordered, and a test can jump.
  const cp = await testControlPlane({
    now: () => ++clock,
    config: { trustForwardedFor: true, rateLimits: { signInFailuresPerEmail: 3, signInFailuresPerIp: 50, signInWindowSeconds: 60, loginRequestsPerIp: 30, loginRequestWindowSeconds: 60 } },
  });
  const secrets = new Map<string, string>([
    ["the owner's password", "correct horse battery staple"],
    ["the owner's API token", cp.adminToken],
  ]);
  const seen = new Set<string>();
  const covered = new Set<AdminAction>();
  const api = async (method: string, path: string, body?: unknown, token: string | null = cp.adminToken) =>
    cp.call(method, cp.org(path), { ...(body === undefined ? {} : { body }), token, headers: FROM });

  /** Admin events of the organization not seen yet, newest first; they are seen from now on. */
  const fresh = async (orgPath: (p: string) => string = cp.org, token = cp.adminToken): Promise<Event[]> => {
    const res = await cp.call("GET", orgPath("/audit-records?kind=admin&limit=500"), { token });
    expect(res.status).toBe(200);
    const events = (res.json.records as Event[]).filter((e) => !seen.has(e.id));
    for (const e of events) seen.add(e.id);
    return events;
  };

  const tokenId = (await cp.call("GET", cp.org("/api-tokens"))).json.api_tokens.find((t: { name: string }) => t.name === "bootstrap").id as string;
  /** The owner acting through the API with their bootstrap token, from IP with UA. */
  const owner: Partial<AdminActor> = { id: cp.accountId, email: "owner@example.com", role: "owner", credential: { kind: "api_token", id: tokenId }, ip: IP, user_agent: UA };

  /**
   * Runs one admin action and returns the one event it wrote (`also`: the actions it starts of
   * its own, such as the run that enabling directory sync starts), with the expected actor.
   */
  const step = async <T>(action: AdminAction, run: () => Promise<T>, actor: Partial<AdminActor> = owner, also: AdminAction[] = []) => {
    await fresh();
    const out = await run();
    const got = await fresh();
    expect({ action, got: got.map((e) => e.action).sort() }).toEqual({ action, got: [action, ...also].sort() });
    const event = got.find((e) => e.action === action)!;
    expect(event.admin.actor).toMatchObject(actor);
    expect(event.actor_id).toBe(event.admin.actor.id);
    for (const a of [action, ...also]) covered.add(a);
    return { out, event };
  };

  return { cp, api, fresh, step, owner, secrets, covered, advance: (ms: number) => (clock += ms) };
}

const leaks = (where: string, text: string, secrets: Map<string, string>) => [...secrets].filter(([, v]) => text.includes(v)).map(([name]) => `${name} in ${where}`);

/**
 * No raw secret anywhere the audit reaches: every column of every stored record (the admin
 * events' detail included), the export in both formats, and each SIEM format's body.
 */
export async function scanForSecrets(cp: TestControlPlane, secrets: Map<string, string>, token = cp.adminToken): Promise<void> {
  const a = tables(cp.deps.db).auditRecords;
  const rows = await cp.deps.db.select().from(a);
  expect(rows.filter((r) => r.kind === "admin").length).toBeGreaterThan(0);
  const found = [
    ...leaks(
      "stored records",
      JSON.stringify(rows, (_k, v) => (typeof v === "bigint" ? String(v) : v)),
      secrets,
    ),
  ];
  for (const format of ["jsonl", "csv", "ocsf", "ecs"]) {
    const res = await cp.call("GET", cp.org(`/audit-records/export?format=${format}`), { token });
    expect(res.status).toBe(200);
    expect(res.text).toContain(format === "csv" ? ",admin," : format === "ocsf" ? '"class_uid":3004' : format === "ecs" ? '"svc":{"kind":"admin"' : '"kind":"admin"');
    found.push(...leaks(`the ${format} export`, res.text, secrets));
  }
  const records = await everyStreamed(cp, true);
  for (const format of ["svc", "ocsf", "ecs"] as const) {
    found.push(...leaks(`the HEC body (${format})`, hecBody(records, "cp", format), secrets));
    found.push(...leaks(`the syslog frames (${format})`, syslogFrames(records, "cp", format).toString("utf8"), secrets));
    found.push(...leaks(`the OTLP request (${format})`, JSON.stringify(otlpLogsRequest(records, "cp", format)), secrets));
  }
  expect(found).toEqual([]);
  // Each real event, of every action the test ran, is valid OCSF and ECS.
  const invalid = records.flatMap((r) => [...ocsfProblems(ocsfEvent(r)).map((p) => `${r.action} OCSF ${p}`), ...ecsProblems(ecsDocument(r), ["svc"]).map((p) => `${r.action} ECS ${p}`)]);
  expect(invalid).toEqual([]);
}
