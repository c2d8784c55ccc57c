// The export's page query (page-query.ts) maps the driver's rows itself: on this store its rows
// are exactly drizzle's own select's, every column decoded as drizzle decodes it, and without the
// named decoders they are not (the stored rows hold each kind of value that needs decoding).
import { expect, test } from "bun:test";
import { asc, eq, sql } from "drizzle-orm";
import { tables } from "../db/index.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { EXPORT_DECODERS, exportColumns } from "./export.ts";
import { pageQuery } from "./page-query.ts";

test("the export's page query gives drizzle's own rows, each column decoded, on this store", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const ts = new Date(cp.deps.now() - 3_600_000).toISOString();
  const records = [
    auditRecord(inst, {
      ts,
      ciphertext: Buffer.from("age-ciphertext-bytes").toString("base64"),
      recipient_key_ids: ["key_A", "key_B"],
      subject: { user_id: null, remote_user_id: null, via_installation: true },
      shadow: { decision: "deny", policy_id: "pol_S", reason: "shadow" },
    }),
    auditRecord(inst, { kind: "outcome", action: "model:invoke", tool_name: null, model: "gpt", outcome: "ok", prompt_tokens: 10, completion_tokens: 5, cost: 0.25, duration_ms: 40 }),
  ];
  expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } })).json.inserted).toBe(2);

  const db = cp.deps.db;
  const a = tables(db).auditRecords;
  const columns = exportColumns(a);
  const drizzles = await db.select(columns).from(a).where(eq(a.orgId, cp.orgId)).orderBy(asc(a.id));
  // the records above and the admin trail's events (detail, actor, target, the admin store chain)
  expect(drizzles.length).toBeGreaterThan(2);
  const page = async (decoders: typeof EXPORT_DECODERS) =>
    pageQuery(
      "audit_page_query_test",
      columns,
      db
        .select(columns)
        .from(a)
        .where(eq(a.orgId, sql.placeholder("org")))
        .orderBy(asc(a.id)),
      decoders,
    )({ org: cp.orgId });

  const rows = await page(EXPORT_DECODERS);
  expect(rows).toEqual(drizzles);
  const shipped = rows.find((r) => r.id === records[0]!.id)!;
  expect([shipped.viaInstallation, shipped.recipientKeyIds, Buffer.isBuffer(shipped.ciphertext), typeof shipped.ts]).toEqual([true, ["key_A", "key_B"], true, "number"]);
  // the test has teeth on this store: undecoded, some column differs from drizzle's value
  expect(await page({ sqlite: {}, postgres: {} })).not.toEqual(drizzles);
});
