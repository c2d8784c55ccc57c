// The export is the same bytes from either store: the same rows written into SQLite and into
// PostgreSQL export to identical text, in chain order (what `svc audit verify` reads) and in id
// order, as JSON lines, CSV, OCSF and ECS. Each store reads its rows through its own driver and
// decoders (page-query.ts, EXPORT_DECODERS), so a column one of them decodes differently (a
// bigint as text, a jsonb list, a bytea, a boolean) shows here as a differing line. The rows
// hold every kind of value the columns take, and values the view cannot show exactly (the line's
// `columns`). Needs SVC_TEST_POSTGRES_URL (the test server); skipped without it.
import { afterAll, expect, test } from "bun:test";
import { type Store, openStore, tables } from "../db/index.ts";
import { TEST_POSTGRES_URL, freshPostgresDatabase } from "../db/test-store.ts";
import { EXPORT_FORMATS, EXPORT_PAGE, exportText } from "./export.ts";

const ORG = "org_01JEXPORTSTORES0000000000";
const T0 = 1_795_859_814_003;
type Row = typeof import("./tables.ts").auditRecords.$inferInsert;

const adminDetail = (actor: string, result: "ok" | "refused", more: object) =>
  JSON.stringify({
    v: 1,
    actor: { id: actor, email: actor === "acc_1" ? "owner@example.com" : null, role: "owner", credential: { kind: "session", id: "abc" }, ip: "10.0.0.1", user_agent: "svc" },
    target: { type: "policy", id: "pol_1", name: "Mail" },
    result,
    status: result === "ok" ? 200 : 401,
    severity: "high",
    ...more,
  });
const id = (i: number) => `rec_01JEXPORT${String(i).padStart(16, "0")}`;
function row(i: number, over: Partial<Row> = {}): Row {
  return {
    id: id(i),
    orgId: ORG,
    workspaceId: "wsp_1",
    installationId: "ins_1",
    agentId: "agt_1",
    replicaId: i % 2 ? "rep_1" : null,
    ts: T0 + i * 1_001,
    receivedAt: T0 + i * 1_001 + 7,
    kind: "tool",
    harness: "open-webui",
    action: "tool:call",
    toolName: "mail.send",
    decision: i % 3 ? "permit" : "deny",
    reason: `rule ${i}: "quoted", a comma, and a line\nbreak; é日本語🙂`,
    policyId: i % 2 ? "pol_1" : null,
    policyRevision: 2_147_483_647,
    userId: i % 4 ? `usr_${i % 5}` : null,
    remoteUserId: null,
    viaInstallation: i % 2 === 0,
    argsDigest: `sha256:${i}`,
    digestKeyId: "dk_1",
    recipientKeyIds: i % 3 ? [] : ["key_A", "key_B"],
    chainId: `chn_${i % 2}`,
    chainSeq: i,
    chainPrev: `prev_${i}`,
    storeChain: "store",
    storeSeq: i,
    storePrev: `sprev_${i}`,
    rollupPending: false,
    ...over,
  };
}

// More rows than a page, so the export reads several pages (and the read ahead of the next).
const ROWS: Row[] = [
  ...Array.from({ length: EXPORT_PAGE + 40 }, (_, i) => row(i)),
  // each kind of value the columns take
  row(1000, { ciphertext: Buffer.from([0, 1, 2, 255, 254]), recipientKeyIds: ["key_C"] }),
  row(1001, { kind: "outcome", action: "model:invoke", toolName: null, model: "gpt", outcome: "ok", exitCode: -1, promptTokens: 10, completionTokens: 5, cost: 0.1, durationMs: 40 }),
  row(1002, { kind: "outcome", cost: 1e-7, durationMs: 0, promptTokens: 0, completionTokens: 0 }),
  row(1003, { cost: 123_456.789, task: "title_generation", toolServer: "mail" }),
  row(1004, { shadowDecision: "deny", shadowPolicyId: "pol_S", shadowReason: "shadow" }),
  row(1005, { upstreamIdentity: JSON.stringify({ kind: "assertion", jti: "jti_1", subject: "alice" }) }),
  row(1006, { ts: 0, receivedAt: 1 }),
  // values the view cannot show exactly: the line's `columns` carries them
  row(1007, { shadowDecision: "permit", shadowPolicyId: null, shadowReason: null }),
  row(1008, { promptTokens: null, completionTokens: 9 }),
  row(1009, { chainId: null, chainSeq: 4, chainPrev: "orphan" }),
  row(1010, { detail: "not JSON, changed in the store" }),
  // the admin trail's events, in a chain of their own
  row(1011, {
    kind: "admin",
    action: "policy.update",
    actorId: "acc_1",
    target: "policy:pol_1",
    detail: adminDetail("acc_1", "ok", { before: { name: "Mail ü" }, after: { name: "Mail" } }),
    storeChain: "admin",
    storeSeq: 1,
  }),
  row(1012, { kind: "admin", action: "key.rotate", actorId: "anonymous", target: "key:k", detail: adminDetail("anonymous", "refused", { code: "unauthorized" }), storeChain: "admin", storeSeq: 2 }),
  // a chain no code names, its first number 0, and rows in no chain
  row(1013, { storeChain: "", storeSeq: 0, storePrev: null }),
  row(1014, { storeChain: null, storeSeq: null, storePrev: null }),
  row(1015, { storeChain: null, storeSeq: null, storePrev: null, chainId: null, chainSeq: null, chainPrev: null }),
];

const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
});

async function exported(store: Store): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const order of ["chain", "id"] as const) {
    for (const format of EXPORT_FORMATS) {
      let text = "";
      for await (const chunk of await exportText(store.db, ORG, {}, format, T0, order)) text += chunk;
      out[`${order} ${format}`] = text;
    }
  }
  return out;
}

test.skipIf(!TEST_POSTGRES_URL)("the same rows export to the same bytes from SQLite and from PostgreSQL, in every order and format", async () => {
  const sqlite = openStore(":memory:");
  const postgres = openStore(await freshPostgresDatabase(), { maxConnections: 4, idleTimeoutSeconds: 2 });
  stores.push(sqlite, postgres);
  for (const store of stores) {
    await store.migrate();
    for (let i = 0; i < ROWS.length; i += 100) await store.db.insert(tables(store.db).auditRecords).values(ROWS.slice(i, i + 100));
  }
  const [fromSqlite, fromPostgres] = [await exported(sqlite), await exported(postgres)];
  for (const k of Object.keys(fromSqlite)) expect(`${k}\n${fromPostgres[k]}`).toBe(`${k}\n${fromSqlite[k]}`);
  // the comparison sees what it should: every row, and the lines that carry stored columns
  const lines = fromSqlite["chain jsonl"]!.trimEnd().split("\n");
  expect(lines).toHaveLength(ROWS.length);
  expect(lines.filter((l) => l.includes('"columns":')).length).toBeGreaterThanOrEqual(4);
  expect(fromSqlite["chain jsonl"]).not.toBe(fromSqlite["id jsonl"]);
});
