// SIEM sinks (issue 15): where an organization's audit records are streamed. Create, list with
// health and lag, change the event format, delete. Secrets are wrapped by the KMS and never read back through the API.
import { and, eq } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { hasPrefix, newId } from "../../contract/ids.ts";
import { type Acting, recordChange, secretDigest } from "../audit/admin-events.ts";
import { legacyBacklog, oldestAfter } from "../audit/ingest-order.ts";
import { storeHead } from "../audit-chain/store-heads.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { type SinkInput, checkSinkInput } from "./config.ts";
import { SIEM_FORMATS, type SiemFormat } from "../audit/siem-record.ts";

export type SinkRow = Tables["siemSinks"]["$inferSelect"];

/** Lag beyond this many records is shown as "at least". */
export const LAG_COUNT_CAP = 100_000;

export const secretContext = (orgId: string, sinkId: string) => `svc:siem-sink-secret:${orgId}:${sinkId}`;

/** A sink as its admin events show it: the secret only as a digest. */
function eventView(row: SinkRow, secret: string | null) {
  return { id: row.id, name: row.name, kind: row.kind, endpoint: row.endpoint, options: row.options, include_ciphertext: row.includeCiphertext, secret: secret === null ? null : secretDigest(secret) };
}

export async function createSink(deps: ControlPlaneDeps, orgId: string, input: SinkInput, by: Acting): Promise<SinkRow> {
  const s = await checkSinkInput(input, { allowPrivate: deps.config.allowPrivateOutbound, allowLoopback: deps.config.allowLoopbackSinks });
  const id = newId("siemSink");
  // From its own creation event on (that event included), unless it backfills.
  const now = by.at;
  const wrappedSecret = s.secret === null ? null : deps.kms.wrap(new TextEncoder().encode(s.secret), secretContext(orgId, id));
  return deps.db.transaction(async (tx) => {
    const [row] = await tx
      .insert(tables(tx).siemSinks)
      .values({
        id,
        orgId,
        name: s.name,
        kind: s.kind,
        endpoint: s.endpoint,
        options: s.options,
        wrappedSecret,
        includeCiphertext: s.includeCiphertext,
        // Backfill starts before every record (the legacy rows first); otherwise after the last
        // record committed now: the admin chain's head is read before this sink's own event.
        cursorReceivedAt: s.backfill ? 0 : now,
        cursorId: "",
        cursorStoreSeq: s.backfill ? null : (await storeHead(tx, orgId, "store")).seq,
        cursorAdminSeq: s.backfill ? null : (await storeHead(tx, orgId, "admin")).seq,
      })
      .onConflictDoNothing()
      .returning();
    if (!row) throw new SvcError("conflict", `a sink named "${s.name}" already exists`);
    await recordChange(tx, by, { orgId, action: "siem_sink.create", target: { type: "siem_sink", id, name: row.name }, after: { ...eventView(row, s.secret), backfill: s.backfill } });
    return row;
  });
}

export async function listSinks(db: Db, orgId: string): Promise<SinkRow[]> {
  const k = tables(db).siemSinks;
  return db.select().from(k).where(eq(k.orgId, orgId)).orderBy(k.name);
}

export async function deleteSink(deps: ControlPlaneDeps, orgId: string, idOrName: string, by: Acting): Promise<SinkRow> {
  return deps.db.transaction(async (tx) => {
    const k = tables(tx).siemSinks;
    const [row] = await tx
      .delete(k)
      .where(and(eq(k.orgId, orgId), hasPrefix(idOrName, "siemSink") ? eq(k.id, idOrName) : eq(k.name, idOrName)))
      .returning();
    if (!row) throw new SvcError("not_found", `sink "${idOrName}" not found`);
    const secret = unwrapSecret(deps, row);
    await recordChange(tx, by, { orgId, action: "siem_sink.delete", target: { type: "siem_sink", id: row.id, name: row.name }, before: eventView(row, secret) });
    return row;
  });
}

/**
 * Changes a sink's event format (svc, ocsf, ecs): the batches sent from then on are in the new
 * one; what was delivered stays as it was, and the cursor does not move (nothing is sent twice
 * or skipped). Admin-trailed (`siem_sink.update`, before and after); the same format is no change
 * and no event.
 */
export async function changeSinkFormat(deps: ControlPlaneDeps, orgId: string, idOrName: string, format: SiemFormat, by: Acting): Promise<SinkRow> {
  if (!SIEM_FORMATS.includes(format))
    throw new SvcError("validation_failed", `format must be one of ${SIEM_FORMATS.join(", ")}`, { errors: [{ path: "/format", message: `must be one of ${SIEM_FORMATS.join(", ")}` }] });
  return deps.db.transaction(async (tx) => {
    const k = tables(tx).siemSinks;
    const [row] = await tx
      .select()
      .from(k)
      .where(and(eq(k.orgId, orgId), hasPrefix(idOrName, "siemSink") ? eq(k.id, idOrName) : eq(k.name, idOrName)));
    if (!row) throw new SvcError("not_found", `sink "${idOrName}" not found`);
    if ((row.options.format ?? "svc") === format) return row;
    const { format: _was, ...rest } = row.options;
    const options = format === "svc" ? rest : { ...rest, format };
    const [changed] = await tx.update(k).set({ options }).where(eq(k.id, row.id)).returning();
    const secret = unwrapSecret(deps, row);
    await recordChange(tx, by, { orgId, action: "siem_sink.update", target: { type: "siem_sink", id: row.id, name: row.name }, before: eventView(row, secret), after: eventView(changed!, secret) });
    return changed!;
  });
}

export function unwrapSecret(deps: ControlPlaneDeps, row: SinkRow): string | null {
  return row.wrappedSecret === null ? null : new TextDecoder().decode(deps.kms.unwrap(row.wrappedSecret, secretContext(row.orgId, row.id)));
}

/**
 * Records not delivered yet: on the chains, the heads' numbers past the cursor (rows retention
 * deleted count too: an upper bound); before that, the legacy rows after the receipt cursor
 * (counted up to LAG_COUNT_CAP) and every chained row besides.
 */
async function lag(db: Db, row: SinkRow): Promise<{ records: number; capped: boolean; oldestReceivedAt: number | null }> {
  const store = (await storeHead(db, row.orgId, "store")).seq;
  const admin = (await storeHead(db, row.orgId, "admin")).seq;
  if (row.cursorStoreSeq !== null && row.cursorAdminSeq !== null) {
    const n = Math.max(0, store - row.cursorStoreSeq) + Math.max(0, admin - row.cursorAdminSeq);
    return {
      records: Math.min(n, LAG_COUNT_CAP),
      capped: n > LAG_COUNT_CAP,
      oldestReceivedAt: n > 0 ? await oldestAfter(db, row.orgId, { store: row.cursorStoreSeq, admin: row.cursorAdminSeq }) : null,
    };
  }
  const legacy = await legacyBacklog(db, row.orgId, { receivedAt: row.cursorReceivedAt, id: row.cursorId }, { cap: LAG_COUNT_CAP });
  const n = legacy.records + store + admin;
  return {
    records: Math.min(n, LAG_COUNT_CAP),
    capped: legacy.capped || n > LAG_COUNT_CAP,
    oldestReceivedAt: legacy.oldestReceivedAt ?? (store + admin > 0 ? await oldestAfter(db, row.orgId, { store: 0, admin: 0 }) : null),
  };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A sink as the API, CLI and console show it: no secret, only whether one is set; health and lag. */
export async function sinkView(db: Db, row: SinkRow, now: number) {
  const backlog = await lag(db, row);
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    endpoint: row.endpoint,
    include_ciphertext: row.includeCiphertext,
    format: row.options.format ?? ("svc" as const),
    enabled: row.enabled,
    secret_set: row.wrappedSecret !== null,
    ca_pem_set: row.options.ca_pem !== undefined,
    server_name: row.options.server_name ?? null,
    created_at: new Date(row.createdAt).toISOString(),
    health: {
      status: row.failures > 0 ? ("failing" as const) : row.lastSuccessAt === null ? ("pending" as const) : ("ok" as const),
      delivered: row.delivered,
      last_success_at: iso(row.lastSuccessAt),
      last_error_at: iso(row.lastErrorAt),
      last_error: row.lastError,
      failures: row.failures,
      next_attempt_at: row.failures > 0 ? iso(row.nextAttemptAt) : null,
      lag_records: backlog.records,
      lag_records_capped: backlog.capped,
      lag_seconds: backlog.oldestReceivedAt === null ? 0 : Math.max(0, Math.round((now - backlog.oldestReceivedAt) / 1000)),
      cursor: { received_at: row.cursorReceivedAt === 0 ? null : iso(row.cursorReceivedAt), id: row.cursorId || null, store_seq: row.cursorStoreSeq, admin_seq: row.cursorAdminSeq },
    },
  };
}

export type SinkView = Awaited<ReturnType<typeof sinkView>>;

export async function sinkViews(db: Db, orgId: string, now: number): Promise<SinkView[]> {
  const out: SinkView[] = [];
  for (const row of await listSinks(db, orgId)) out.push(await sinkView(db, row, now));
  return out;
}
