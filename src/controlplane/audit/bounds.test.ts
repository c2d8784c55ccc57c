// The index bounds of a search (bounds.ts) never lose a record: a tool prefix finds every tool
// name that starts with it, whatever its characters, on both stores; a time filter's id range
// holds every record dated inside it; and ingest refuses the record whose id would put it outside.
import { expect, test } from "bun:test";
import { and, desc, eq, lt, type SQL } from "drizzle-orm";
import { idFloor, newId } from "../../contract/ids.ts";
import { rawStatements, tables } from "../db/index.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { ID_TIME_SLACK_MS, idBounds, literalPrefix, prefixSuccessor } from "./bounds.ts";
import { recordRow } from "./ingest.ts";
import { newestInTwoSteps } from "./newest.ts";
import { filterConditions, searchRecords } from "./query.ts";

test("a prefix's successor is the least text above every text that starts with it", () => {
  expect(prefixSuccessor("mail.")).toBe("mail/");
  expect(prefixSuccessor("a\u{10FFFF}")).toBe("b");
  expect(prefixSuccessor("\u{10FFFF}")).toBeNull();
  expect(prefixSuccessor("")).toBeNull();
  expect(prefixSuccessor("x\uD7FF")).toBe("x\uE000");
  expect(literalPrefix("crm.*.read")).toBe("crm.");
  expect(literalPrefix("crm.")).toBe("crm.");
  expect(literalPrefix("?rm")).toBe("");
  const t = Date.UTC(2026, 10, 27, 12);
  const { min, below } = idBounds(t, t + 1000);
  expect(newId("auditRecord", t - ID_TIME_SLACK_MS) >= min!).toBe(true);
  expect(newId("auditRecord", t - ID_TIME_SLACK_MS - 1) < min!).toBe(true);
  expect(newId("auditRecord", t + 1000 + ID_TIME_SLACK_MS) < below!).toBe(true);
  expect(below).toBe(idFloor("auditRecord", t + 1000 + ID_TIME_SLACK_MS + 1));
});

test("a tool prefix finds every tool that starts with it and no other, on either store", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const names = ["mail.send", "mail.ü", "mail.\u{10FFFF}x", "mail./", "mailbox", "mail-x", "MAIL.upper", "mail"];
  const records = names.map((tool_name) => auditRecord(inst, { tool_name, action: `tool:${tool_name}` }));
  expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } })).json.inserted).toBe(names.length);
  const found = async (tool: string) => (await searchRecords(cp.deps.db, cp.orgId, { tool, limit: 100 })).records.map((r) => r.tool_name).sort();
  expect(await found("mail.")).toEqual(["mail./", "mail.send", "mail.ü", "mail.\u{10FFFF}x"].sort());
  expect(await found("mail*")).toEqual(["mail", "mail-x", "mail./", "mail.send", "mail.ü", "mail.\u{10FFFF}x", "mailbox"].sort());
  expect(await found("mail.?")).toEqual(["mail./", "mail.ü"]);
  expect(await found("mail.%")).toEqual([]);
  // (tool names compare exactly on both stores, as PostgreSQL's LIKE always did)
  expect(await found("MAIL")).toEqual(["MAIL.upper"]);
  expect(await found("nope.")).toEqual([]);
  // more names than the search lists one by one (32): the range of the tool index, the same answer
  const many = Array.from({ length: 40 }, (_, i) => `x.t${String(i).padStart(2, "0")}`);
  expect(
    (await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: many.map((tool_name) => auditRecord(inst, { tool_name, action: `tool:${tool_name}` })) } })).json
      .inserted,
  ).toBe(40);
  expect(await found("x.")).toEqual(many);
  expect(await found("x.t1")).toEqual(many.slice(10, 20));
  // PostgreSQL: the range is one of code points only in the C collation, whatever the column's
  // (this test server's databases are C.UTF-8, where the answers above come out the same without
  // it): under an ICU collation, where "mail-x" sorts between "mail.…" names and case is ignored
  // first, the tool index's (tool_name COLLATE "C") gives the same answers.
  if (cp.store.dialect === "postgres") {
    await rawStatements(cp.deps.db).rows('ALTER TABLE "audit_records" ALTER COLUMN "tool_name" SET DATA TYPE text COLLATE "en-x-icu"', []);
    expect(await found("mail.")).toEqual(["mail./", "mail.send", "mail.ü", "mail.\u{10FFFF}x"].sort());
    expect(await found("mail*")).toEqual(["mail", "mail-x", "mail./", "mail.send", "mail.ü", "mail.\u{10FFFF}x", "mailbox"].sort());
    expect(await found("MAIL")).toEqual(["MAIL.upper"]);
    expect(await found("x.t1")).toEqual(many.slice(10, 20));
    const definition = await rawStatements(cp.deps.db).rows("SELECT indexdef FROM pg_indexes WHERE indexname = 'audit_org_tool_decision_id'", []);
    expect(String(definition[0]?.[0])).toContain('tool_name COLLATE "C"');
  }
});

test("a time filter's id range keeps every record dated inside it; ingest refuses an id made far from its timestamp", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const now = cp.deps.now();
  const since = now - 3_600_000;
  // ids made at the edges of what ingest takes: the slack before and after the timestamp
  const early = auditRecord(inst, { ts: new Date(since).toISOString() });
  early.id = newId("auditRecord", since - ID_TIME_SLACK_MS);
  const late = auditRecord(inst, { ts: new Date(since - 1).toISOString() });
  late.id = newId("auditRecord", since - 1 + ID_TIME_SLACK_MS);
  const skewed = auditRecord(inst, { ts: new Date(since).toISOString() });
  skewed.id = newId("auditRecord", since - ID_TIME_SLACK_MS - 60_000);
  const shipped = (await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [early, late, skewed] } })).json;
  expect(shipped.inserted).toBe(2);
  expect(shipped.rejected).toEqual([{ id: skewed.id, code: "malformed", reason: expect.stringContaining("more than 60 minutes from its timestamp") }]);
  const ids = async (f: { since?: string; until?: string; from?: string; to?: string }) => (await searchRecords(cp.deps.db, cp.orgId, { ...f, kind: "tool" }, now)).records.map((r) => r.id);
  expect(await ids({ since: "1h" })).toEqual([early.id]);
  expect(await ids({ until: "1h" })).toEqual([late.id]);
  expect(await ids({ from: new Date(since).toISOString(), to: new Date(since).toISOString() })).toEqual([early.id]);
  expect(await ids({ to: new Date(since - 1).toISOString() })).toEqual([late.id]);
});

test("a tool prefix or a policy pages newest first, past the newest records and below them, without losing or repeating a record", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const now = cp.deps.now();
  // records from a minute to about three years old (stored before, as a long-kept store holds them), and a few ahead of the clock
  const ages = [...Array.from({ length: 40 }, (_, i) => (i * i * i + 1) * 60_000 * 7), -5 * 60_000, -14 * 60_000];
  const rows = ages.map((age, i) =>
    recordRow(auditRecord(inst, { ts: new Date(now - age).toISOString(), tool_name: i % 3 === 0 ? "crm.read" : "mail.send", action: "tool", policy_id: i % 2 === 0 ? "pol_X" : null }), now),
  );
  await cp.deps.db.insert(tables(cp.deps.db).auditRecords).values(rows);
  const expected = (keep: (r: (typeof rows)[number]) => boolean) =>
    rows
      .filter(keep)
      .map((r) => r.id)
      .sort()
      .reverse();
  for (const [filter, keep] of [
    [{ tool: "mail." }, (r: (typeof rows)[number]) => r.toolName === "mail.send"],
    [{ policy: "pol_X" }, (r: (typeof rows)[number]) => r.policyId === "pol_X"],
    [{ tool: "crm.", since: "400d" }, (r: (typeof rows)[number]) => r.toolName === "crm.read" && r.ts >= now - 400 * 86_400_000],
  ] as const) {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await searchRecords(cp.deps.db, cp.orgId, { ...filter, limit: 3, ...(cursor ? { cursor } : {}) }, now);
      seen.push(...page.records.map((r) => r.id));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect({ filter, seen }).toEqual({ filter, seen: expected(keep) });
    // the two steps, with the probe of the newest records smaller than a page: every page crosses from one to the other
    const stepped: string[] = [];
    let below: string | null = null;
    for (;;) {
      const conds = (await filterConditions(cp.deps.db, cp.orgId, filter, now))!;
      const a = tables(cp.deps.db).auditRecords;
      const after: SQL[] = below ? [lt(a.id, below)] : [];
      const read = async (extra: SQL[], n: number): Promise<{ id: string }[]> =>
        cp.deps.db
          .select({ id: a.id })
          .from(a)
          .where(and(...conds, ...after, ...extra))
          .orderBy(desc(a.id))
          .limit(n);
      const page: { id: string }[] = await newestInTwoSteps(cp.deps.db, 4, [eq(a.orgId, cp.orgId), ...after], read, 5);
      stepped.push(...page.map((r) => r.id));
      if (page.length < 4) break;
      below = page.at(-1)!.id;
    }
    expect({ filter, stepped }).toEqual({ filter, stepped: expected(keep) });
  }
});
