// Delivery: each enabled sink is streamed the organization's audit records in commit order
// (the store and admin chains' numbers, audit/ingest-order.ts) after its cursor, a batch at a
// time; rows stored before the store chains first, once, in their receipt order. The cursor moves only after the receiver took the batch,
// so a receiver outage or a restart resends from the last batch taken (at-least-once; the
// record id is the stable event id). A failed batch waits 2^failures seconds (capped), then is
// sent again. With several control-plane replicas on one database, a sink is delivered by the
// replica holding its lease (a row update that only one wins; renewed with every batch).
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { and, asc, eq, isNull, lt, lte, or } from "drizzle-orm";
import { type StreamedRecord, chainRecordsAfter, legacyRecordsAfter } from "../audit/ingest-order.ts";
import { tables } from "../db/index.ts";
import { loggableError } from "../db/errors.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { endpointUrl } from "./config.ts";
import { checkOutboundUrl } from "../http/outbound.ts";
import { type SinkRow, unwrapSecret } from "./service.ts";
import { type Send, sendFor } from "./transports.ts";
import { traceDelivery } from "../traces.ts";

export type DeliveryOptions = {
  /** This replica's lease owner id. */
  owner?: string;
  /** Rows stored before the store chains received in the last settleMs are left for the next pass (ingest-order.ts). */
  settleMs?: number;
  batchSize?: number;
  leaseMs?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Replaces the network send (tests of the loop itself). */
  sendFor?: (row: SinkRow) => Send;
};

export const DEFAULTS = { settleMs: 2000, batchSize: 500, leaseMs: 60_000, backoffBaseMs: 1000, backoffMaxMs: 300_000 };

export const newOwnerId = () => `${hostname().slice(0, 40)}:${process.pid}:${randomBytes(4).toString("hex")}`;

/** The wait before attempt n+1 after n failures in a row. Pure. */
export function backoffMs(failures: number, base = DEFAULTS.backoffBaseMs, max = DEFAULTS.backoffMaxMs): number {
  return Math.min(max, base * 2 ** Math.max(0, Math.min(failures - 1, 30)));
}

/** Takes (or renews) the sink's lease for `owner`; false when another replica holds it. */
async function claim(deps: ControlPlaneDeps, id: string, owner: string, now: number, leaseMs: number): Promise<SinkRow | null> {
  const k = tables(deps.db).siemSinks;
  const [row] = await deps.db
    .update(k)
    .set({ leaseOwner: owner, leaseUntil: now + leaseMs })
    .where(and(eq(k.id, id), eq(k.enabled, true), or(eq(k.leaseOwner, owner), lt(k.leaseUntil, now))))
    .returning();
  return row ?? null;
}

/** The next batch for a sink, and the update that moves its cursor past it (pure but for the reads). */
async function nextBatch(deps: ControlPlaneDeps, row: SinkRow, o: { settleMs: number; batchSize: number }): Promise<{ records: StreamedRecord[]; move: Partial<SinkRow> } | null> {
  if (row.cursorStoreSeq === null || row.cursorAdminSeq === null) {
    // Rows stored before the store chains first, by receipt time; then the chains from their start.
    const cursor = { receivedAt: row.cursorReceivedAt, id: row.cursorId };
    const { records, next } = await legacyRecordsAfter(deps.db, row.orgId, cursor, { settledBefore: deps.now() - o.settleMs, limit: o.batchSize, withCiphertext: row.includeCiphertext });
    if (next) return { records, move: { cursorReceivedAt: next.receivedAt, cursorId: next.id } };
    // Switch only once no legacy row is left at all (one too recent to be settled waits for the next pass).
    const unsettled = await legacyRecordsAfter(deps.db, row.orgId, cursor, { settledBefore: Number.MAX_SAFE_INTEGER, limit: 1, withCiphertext: false });
    if (unsettled.next) return null;
    return { records: [], move: { cursorStoreSeq: 0, cursorAdminSeq: 0 } };
  }
  const { records, next } = await chainRecordsAfter(deps.db, row.orgId, { store: row.cursorStoreSeq, admin: row.cursorAdminSeq }, { limit: o.batchSize, withCiphertext: row.includeCiphertext });
  if (records.length === 0) return null;
  return { records, move: { cursorStoreSeq: next.store, cursorAdminSeq: next.admin } };
}

/** Sends one sink's backlog until it is empty, the receiver fails, or the lease is lost. Returns records delivered. */
export async function deliverSink(deps: ControlPlaneDeps, sinkId: string, o: DeliveryOptions & { owner: string }): Promise<number> {
  const { settleMs, batchSize, leaseMs, backoffBaseMs, backoffMaxMs } = { ...DEFAULTS, ...o };
  const k = tables(deps.db).siemSinks;
  const claimed = await claim(deps, sinkId, o.owner, deps.now(), leaseMs);
  if (!claimed) return 0;
  let row: SinkRow = claimed;
  let send: Send | null = null;
  let sent = 0;
  for (;;) {
    const batch = await nextBatch(deps, row, { settleMs, batchSize });
    if (!batch) return sent;
    const { records, move } = batch;
    if (records.length > 0) {
      try {
        if (!o.sendFor)
          await checkOutboundUrl(endpointUrl(row.kind, row.endpoint), {
            what: "endpoint",
            allowPrivate: deps.config.allowPrivateOutbound,
            allowLoopback: deps.config.allowLoopbackSinks,
            stage: "fetch",
          });
        send ??= o.sendFor ? o.sendFor(row) : sendFor({ kind: row.kind, endpoint: row.endpoint, secret: unwrapSecret(deps, row), options: row.options, host: hostname() });
        const sending = send;
        await traceDelivery(deps, { id: row.id, orgId: row.orgId, kind: row.kind, format: row.options.format ?? "svc" }, records.length, async () => sending(records));
      } catch (e) {
        const failures = row.failures + 1;
        const error = loggableError(e).slice(0, 500);
        const at = deps.now();
        await deps.db
          .update(k)
          .set({ failures, lastError: error, lastErrorAt: at, nextAttemptAt: at + backoffMs(failures, backoffBaseMs, backoffMaxMs) })
          .where(and(eq(k.id, row.id), eq(k.leaseOwner, o.owner)));
        deps.log.warn("siem sink delivery failed", { sink_id: row.id, org_id: row.orgId, kind: row.kind, failures, records: records.length, error });
        return sent;
      }
    }
    const at = deps.now();
    const delivered = records.length > 0 ? { delivered: row.delivered + records.length, lastSuccessAt: at, failures: 0, nextAttemptAt: 0 } : {};
    // Moved only from where this pass read (and while the lease is ours): two holders never both move it.
    const [moved]: SinkRow[] = await deps.db
      .update(k)
      .set({ ...move, ...delivered, leaseUntil: at + leaseMs })
      .where(and(eq(k.id, row.id), eq(k.leaseOwner, o.owner), ...cursorIs(k, row)))
      .returning();
    // Lost the lease (or the sink was deleted) meanwhile: the batch may be sent again by the new holder.
    if (!moved) return sent;
    if (records.length > 0 && row.failures > 0) deps.log.info("siem sink delivering again", { sink_id: row.id, after_failures: row.failures });
    sent += records.length;
    row = moved;
    if (records.length > 0 && records.length < batchSize) return sent;
  }
}

/** The conditions that the sink's cursor is still the one `row` read from. */
function cursorIs(k: ReturnType<typeof tables>["siemSinks"], row: SinkRow) {
  return [
    eq(k.cursorReceivedAt, row.cursorReceivedAt),
    eq(k.cursorId, row.cursorId),
    row.cursorStoreSeq === null ? isNull(k.cursorStoreSeq) : eq(k.cursorStoreSeq, row.cursorStoreSeq),
    row.cursorAdminSeq === null ? isNull(k.cursorAdminSeq) : eq(k.cursorAdminSeq, row.cursorAdminSeq),
  ];
}

/** One pass over every due sink (enabled, not backing off, lease free or ours). Returns records delivered. */
export async function deliverDue(deps: ControlPlaneDeps, o: DeliveryOptions & { owner: string }, stopped: () => boolean = () => false): Promise<number> {
  const k = tables(deps.db).siemSinks;
  const now = deps.now();
  const due = await deps.db
    .select({ id: k.id })
    .from(k)
    .where(and(eq(k.enabled, true), lte(k.nextAttemptAt, now), or(eq(k.leaseOwner, o.owner), lt(k.leaseUntil, now))))
    .orderBy(asc(k.id));
  let n = 0;
  for (const { id } of due) {
    if (stopped()) break;
    try {
      n += await deliverSink(deps, id, o);
    } catch (e) {
      deps.log.error("siem sink pass failed", { sink_id: id, error: loggableError(e) });
    }
  }
  return n;
}

/** Releases the leases this replica holds, so another takes over without waiting for them to run out. */
export async function releaseLeases(deps: ControlPlaneDeps, owner: string): Promise<void> {
  const k = tables(deps.db).siemSinks;
  await deps.db.update(k).set({ leaseOwner: null, leaseUntil: 0 }).where(eq(k.leaseOwner, owner));
}

/** The delivery loop of `svc controlplane serve`: a pass every tickMs, one at a time. */
export function startSinkDelivery(deps: ControlPlaneDeps, o: DeliveryOptions & { tickMs?: number } = {}): () => Promise<void> {
  const owner = o.owner ?? newOwnerId();
  let stopped = false;
  let running: Promise<void> | null = null;
  const tick = () => {
    if (stopped || running) return;
    running = deliverDue(deps, { ...o, owner }, () => stopped)
      .then(() => undefined)
      .catch((e: unknown) => deps.log.error("siem sink delivery loop failed", { error: loggableError(e) }))
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(tick, o.tickMs ?? 1000);
  queueMicrotask(tick);
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
    await releaseLeases(deps, owner).catch(() => undefined);
  };
}
