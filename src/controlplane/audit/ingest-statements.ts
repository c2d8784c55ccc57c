// The statements an ingest batch writes, built by hand (issue 30): they travel as the
// transaction's last statements, with its COMMIT behind them on PostgreSQL (one round trip while
// the organization's store head is locked: ingest.ts, db/store.ts rawStatements().finish).
// Each text is made once per dialect and row count and prepared once by the driver: drizzle's
// query builder spent more on a 500-row, 31-column batch than the database did storing it
// (~130 µs per row, measured). Values still go through each column's own driver mapping.
import { getTableName } from "drizzle-orm";
import type { AuditRecord } from "../../contract/audit.ts";
import { type Dialect, type Statement, type Tables, placeholders } from "../db/index.ts";
import { recordRow } from "./row.ts";

/** Rows per INSERT: 42 parameters each stays under SQLite's (32,766) and PostgreSQL's (65,535) parameter limits. */
export const CHUNK = 500;

type Row = ReturnType<typeof recordRow>;
const ROW_KEYS = Object.keys(recordRow({ subject: {}, ts: "", ciphertext: null } as unknown as AuditRecord, 0)) as (keyof Row)[];
const texts = new Map<string, string>();

/**
 * `INSERT … VALUES (…), (…) RETURNING id` of new rows. A record id already stored fails it on
 * PostgreSQL (unique violation: the transaction is rolled back, even with its COMMIT already
 * sent, and ingest runs it again knowing the held ids); on SQLite, where the transaction commits
 * only after its body returns, `ON CONFLICT DO NOTHING` and the ids returned tell the same.
 */
export function insertRecords(dialect: Dialect, a: Tables["auditRecords"], rows: readonly Row[]): Statement {
  const columns = ROW_KEYS.map((k) => a[k] as unknown as { name: string; mapToDriverValue(v: unknown): unknown });
  const key = `${dialect}:${rows.length}`;
  let text = texts.get(key);
  if (!text) {
    const p = placeholders(dialect);
    const row = () => `(${columns.map(p).join(",")})`;
    text = `INSERT INTO "${getTableName(a)}" (${columns.map((c) => `"${c.name}"`).join(",")}) VALUES ${rows.map(row).join(",")}${dialect === "sqlite" ? ` ON CONFLICT ("id") DO NOTHING` : ""} RETURNING "id"`;
    texts.set(key, text);
  }
  const params: unknown[] = [];
  for (const r of rows) for (let i = 0; i < ROW_KEYS.length; i++) params.push(r[ROW_KEYS[i]!] === null ? null : columns[i]!.mapToDriverValue(r[ROW_KEYS[i]!]));
  return { text, params };
}

/** Whether `e` is the unique violation of a record id already stored (insertRecords on PostgreSQL). */
export function isHeldIdConflict(e: unknown): boolean {
  const pg = e as { errno?: unknown; constraint?: unknown } | null;
  return pg?.errno === "23505" && pg.constraint === "audit_records_pkey";
}

/**
 * One UPDATE that completes each decision record an outcome names (its `ref`) with the
 * outcome, among the caller's own records: two outcomes of one decision in a batch, the later
 * one's. Empty when no record is an outcome with a ref.
 */
export function completeDecisions(dialect: Dialect, caller: { orgId: string; installationId: string }, outcomes: readonly AuditRecord[]): Statement[] {
  const byRef = new Map<string, AuditRecord>();
  for (const r of outcomes) if (r.kind === "outcome" && r.ref) byRef.set(r.ref, r);
  const all = [...byRef.values()];
  const out: Statement[] = [];
  for (let k = 0; k < all.length; k += CHUNK) {
    const chunk = all.slice(k, k + CHUNK);
    const p = placeholders(dialect);
    const values = chunk.map(() => (dialect === "postgres" ? `(${p()}::text,${p()}::text,${p()}::integer)` : `(${p()},${p()},${p()})`)).join(",");
    const from =
      dialect === "postgres" ? `(VALUES ${values}) AS v("id", "outcome", "exit_code")` : `(SELECT column1 AS "id", column2 AS "outcome", column3 AS "exit_code" FROM (VALUES ${values})) AS v`;
    out.push({
      text: `UPDATE "audit_records" SET "outcome" = v."outcome", "exit_code" = v."exit_code" FROM ${from} WHERE "audit_records"."id" = v."id" AND "audit_records"."org_id" = ${p()} AND "audit_records"."installation_id" = ${p()}`,
      params: [...chunk.flatMap((r) => [r.ref, r.outcome ?? null, r.exit_code ?? null]), caller.orgId, caller.installationId],
    });
  }
  return out;
}
