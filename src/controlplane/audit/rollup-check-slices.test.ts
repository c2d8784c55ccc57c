// An hour holding many records is checked in slices (rollup-check.ts), on the real app (SQLite,
// and PostgreSQL with SVC_TEST_POSTGRES_URL), with a slice of a few entries standing in for
// 20,000. On SQLite one long read would hold the one connection and every other request (8.1 s
// for an hour of a million records, docs/performance.md): other statements run between the
// slices. Roll-ups equal to the records pass, a lowered one is still found, and records that
// change under the slices give no false finding: a key whose roll-up moved is read again, a
// difference on a key that did not move (changes that netted out) is read whole before it counts.
import { expect, test } from "bun:test";
import { and, asc, eq } from "drizzle-orm";
import type { AuditRecord } from "../../contract/audit.ts";
import { newId } from "../../contract/ids.ts";
import { AuditChain } from "../../proxy/audit/chain.ts";
import { nextTurn, tables } from "../db/index.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { checkRollups } from "./rollup-check.ts";
import { lowerCalls, lowerUsage } from "./rollup-fixtures.ts";
import { HOUR, applyToRollups, hourOf } from "./rollups.ts";

const SLICE = 8;
const KINDS = [
  { kind: "tool" as const, action: "tool:mail.send", tool_name: "mail.send" },
  { kind: "model" as const, action: "model:invoke", tool_name: null, model: "gpt" },
  { kind: "outcome" as const, action: "model:invoke", tool_name: null, model: "gpt", outcome: "ok" as const, prompt_tokens: 12, completion_tokens: 3, cost: 0.002 },
];

/** One hour three hours back holding `n` records, spread over it: decisions and model outcomes of two users. */
async function bigHour(n = 150, logQuery?: (text: string) => void) {
  const cp = await testControlPlane({ logQuery });
  const inst = await addInstallation(cp);
  const chain = new AuditChain();
  const hour = hourOf(cp.deps.now()) - 3 * HOUR;
  const make = (ts: number, i: number) =>
    chain.stamp(
      auditRecord(inst, {
        ts: new Date(ts).toISOString(),
        subject: { user_id: i % 2 === 0 ? "usr_a" : "usr_b", remote_user_id: "fe", via_installation: false },
        decision: i % 5 === 0 ? "deny" : "permit",
        ...KINDS[i % 3]!,
      }),
    );
  const ship = async (records: AuditRecord[]) => {
    const r = await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } });
    expect(r.json.inserted).toBe(records.length);
  };
  await ship(Array.from({ length: n }, (_, i) => make(hour + Math.floor((i * HOUR) / n), i)));
  return { cp, db: cp.deps.db, orgId: cp.orgId, hour, make, ship };
}

test("a big hour is summed in slices with other statements between them; equal roll-ups pass, lowered ones are found", async () => {
  const log: string[] = [];
  let watching = false;
  const { cp, db, orgId, hour } = await bigHour(150, (text) => {
    if (watching) log.push(text);
  });
  const t = tables(db);
  // another request's statements, a turn of the event loop apart, while the check runs
  watching = true;
  let done = false;
  const probes = (async () => {
    while (!done) {
      await db.select({ id: t.organizations.id }).from(t.organizations).limit(1);
      log.push("probe");
      await nextTurn();
    }
  })();
  const check = await checkRollups(db, orgId, { slice: SLICE });
  done = true;
  await probes;
  watching = false;
  expect(check).toMatchObject({ mismatches: 0, first: [], rereads: 0, wholeReads: 0 });
  // 50 of each kind, 8 a slice: 6 slices of each scan before its open-ended last (and the
  // decisions' ids are read again, filtered by time, for the next hour, whose id range reaches back)
  expect(check.slices).toBeGreaterThanOrEqual(18);
  const sums = log.flatMap((text, i) => (/group by/i.test(text) && text.includes("'tool'") ? [i] : []));
  expect(sums.length).toBeGreaterThanOrEqual(7);
  const gapsWithProbe = sums.slice(1).filter((at, k) => log.slice(sums[k]!, at).includes("probe")).length;
  // on SQLite a probe runs in every gap; on PostgreSQL, whose transaction would not hold it, in most
  expect(gapsWithProbe).toBeGreaterThanOrEqual(cp.store.dialect === "sqlite" ? sums.length - 1 : 3);

  // the attack: one decision count and one usage row of the big hour lowered by SQL
  const [calls] = await db
    .select()
    .from(t.auditHourlyCalls)
    .where(and(eq(t.auditHourlyCalls.orgId, orgId), eq(t.auditHourlyCalls.hour, hour), eq(t.auditHourlyCalls.kind, "tool")))
    .limit(1);
  await lowerCalls(db, calls!);
  await lowerUsage(db, orgId, "usr_b", { promptTokens: 12 }, hour);
  const tampered = await checkRollups(db, orgId, { slice: SLICE });
  expect(tampered).toMatchObject({ mismatches: 2, wholeReads: 1 });
  expect(tampered.first.find((m) => m.table === "audit_hourly_calls")).toMatchObject({ rollup: { calls: calls!.calls - 1 }, records: { calls: calls!.calls } });
  const usage = tampered.first.find((m) => m.table === "audit_hourly_usage")!;
  expect(usage.key.user_id).toBe("usr_b");
  expect(usage.records.prompt_tokens! - usage.rollup.prompt_tokens!).toBe(12);
}, 60_000);

test("records ingested into the part of the hour already summed: the moved key is read again, no false finding", async () => {
  const { db, orgId, hour, make, ship } = await bigHour();
  // late records (a proxy's backlog) dated at the start of the hour: in the first slices, read already
  const late = [0, 3, 6].map((i) => make(hour + 1000 + i, i));
  let shipped = false;
  const check = await checkRollups(db, orgId, {
    slice: SLICE,
    between: async () => {
      if (shipped) return;
      shipped = true;
      await ship(late);
    },
  });
  expect(shipped).toBe(true);
  expect(check).toMatchObject({ mismatches: 0, rereads: 1, wholeReads: 0 });
  // and they are counted: the next check, with nothing moving, agrees too
  expect(await checkRollups(db, orgId, { slice: SLICE })).toMatchObject({ mismatches: 0, rereads: 0, wholeReads: 0 });
}, 60_000);

test("records ingested at the hour's open end while it is sliced, as a busy current hour receives them: no read again", async () => {
  const { db, orgId, hour, make, ship } = await bigHour();
  let shipped = 0;
  const check = await checkRollups(db, orgId, {
    slice: SLICE,
    between: async () => {
      // new records carry new ids and times: after every slice boundary so far
      if (shipped === 3) return;
      const k = shipped++;
      await ship([0, 1, 2].map((i) => make(hour + HOUR - 100 + k * 10 + i, i + k)));
    },
  });
  expect(shipped).toBe(3);
  expect(check).toMatchObject({ mismatches: 0, rereads: 0, wholeReads: 0 });
}, 60_000);

test("changes that net out in the roll-ups while the slices read them: confirmed by one whole read, no false finding", async () => {
  const { db, orgId, hour } = await bigHour();
  const a = tables(db).auditRecords;
  let changed = false;
  const check = await checkRollups(db, orgId, {
    slice: SLICE,
    between: async () => {
      if (changed) return;
      changed = true;
      // in one transaction, as ingest and retention would: the hour's first decision (summed
      // already) deleted and one of its key added at the end of the hour (not summed yet), each
      // with its roll-up change: the key's roll-up reads the same before and after
      await db.transaction(async (tx) => {
        const [first] = await tx
          .select()
          .from(a)
          .where(and(eq(a.orgId, orgId), eq(a.kind, "tool")))
          .orderBy(asc(a.id))
          .limit(1);
        const ts = hour + HOUR - 1000;
        const twin = { ...first!, id: newId("auditRecord", ts), ts, chainId: null, chainSeq: null, chainPrev: null, storeChain: null, storeSeq: null, storePrev: null };
        await tx.insert(a).values(twin);
        await applyToRollups(tx, [twin]);
        await applyToRollups(tx, [first!], -1);
        await tx.delete(a).where(eq(a.id, first!.id));
      });
    },
  });
  expect(changed).toBe(true);
  expect(check).toMatchObject({ mismatches: 0, rereads: 0, wholeReads: 1 });
}, 60_000);
