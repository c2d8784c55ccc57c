// The audit shipper: sends spooled records in batches to POST /api/v1/runtime/audit-records
// and drops them from the spool only once the control plane acknowledged them by id. On a
// failure it retries with exponential backoff and jitter. The control plane deduplicates by
// record id, so a batch resent after a crash or a lost answer is harmless.
// Records are durable in the spool before anyone waits on shipping, so the shipper lets a
// batch gather for a short linger instead of sending each record as it lands: one round trip,
// one control-plane commit and one ack fsync per batch rather than per decision.
//
// Shipping by explicit verdicts: only the control plane's verdict on a record sets it aside.
// Records it names in `rejected` for good (malformed, not the caller's, id taken, too old) go
// to the spool's rejected.jsonl, with a warning naming their ids, and shipping continues; one
// it rejects as dated ahead of its clock (`clock_skew`: the runtime's clock is fast) is kept
// and sent again until that clock catches up. A status for the whole request, from the control
// plane or from anything in between (an ingress's 413, a proxy's 502, a 400 or 404 of a
// misrouted URL), says nothing about any one record: the batch is kept and sent again with
// backoff, the failure counted in metrics (`failures`, by status) and logged once per streak.
// A 413 also halves the batch, down to one record, in case something in between takes smaller
// requests. `svc proxy spool replay` sends set-aside records again once their cause is fixed
// (spool-replay.ts).
// One exception, never sent at all: records of another installation or organization than the
// one this token bootstrapped as (a spool volume reused by another installation) are set aside
// here, since sending them would hand them to the wrong control plane or organization.
// A refused credential (401/403) keeps every record in the spool: they ship if the token works
// again. Until the proxy knows its installation (bootstrap), nothing is shipped.
import type { AuditRecord } from "../../contract/audit.ts";
import { type AuditBatchResponse, RETRYABLE_REJECTIONS } from "../../contract/runtime-api.ts";
import type { Logger } from "../../log/index.ts";
import { ControlPlaneError, type ControlPlaneClient } from "../link/control-plane-client.ts";
import type { AuditSpool, SetAside } from "./spool.ts";

export type ShipperOptions = {
  spool: AuditSpool;
  client: Pick<ControlPlaneClient, "shipAudit">;
  log: Logger;
  batchSize?: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  random?: () => number;
  /** How long a batch that is not yet full may gather before it is sent (default 200 ms). */
  lingerMs?: number;
  /**
   * The installation and organization this proxy bootstrapped as; null while unknown (nothing
   * ships then). Records of another owner are set aside, never sent. Absent: no check (tests).
   */
  owner?: () => { installationId: string; organizationId: string } | null;
  /** Every failed call; true when it was a refused credential (BundleLoop.credentialCheck). */
  onError?: (e: unknown) => boolean;
  /** Draining a backlog: a full collection after this many records shipped in full batches (default COLLECT_EVERY_RECORDS; 0: never). */
  collectEveryRecords?: number;
  /** The collection (default: Bun's synchronous full GC); tests count the calls. */
  collect?: () => void;
};

export const DEFAULT_LINGER_MS = 200;
/**
 * While a backlog drains (batch after full batch), garbage of read-back lines, parsed records
 * and request bodies piles up faster than Bun collects it on its own: draining 1M records took
 * the process from 75 to 163 MB of RSS (196 MB with sealed records) with a JS heap of 12–46 MB
 * (bench/shipper-drain.ts, issue 34). A full collection every 5,000 records (ten batches,
 * ~60–150 ms of draining here) keeps the peak at 99 MB (117 MB sealed); every 20,000 was not
 * enough for sealed records (159 MB). It costs CPU while draining (7.0 → 10.4 µs per record in
 * one run at load 11); a trickle of records never fills a batch and never triggers one, nor
 * does a steady load the shipper keeps up with (full batches with no backlog behind them).
 */
export const COLLECT_EVERY_RECORDS = 5_000;

type Rejection = NonNullable<AuditBatchResponse["rejected"]>[number];

/**
 * The control plane will take this record later: it is dated ahead of its clock. A control plane
 * without rejection codes says so only in the reason.
 */
export function isRetryableRejection(x: Rejection): boolean {
  return x.code ? RETRYABLE_REJECTIONS.includes(x.code) : /ahead of the control plane's clock/.test(x.reason);
}

/** How a failed call is counted: its HTTP status, or `network` when nothing answered. */
export function failureKind(e: unknown): string {
  return e instanceof ControlPlaneError && e.status !== null ? String(e.status) : "network";
}

export class AuditShipper {
  private wakeUp: (() => void) | null = null;
  private interrupt: (() => void) | null = null;
  private stopped = false;
  private loop: Promise<void> | null = null;
  private backoffMs = 0;
  private sleepTimer: ReturnType<typeof setTimeout> | null = null;
  /** A smaller batch size after a 413 (something in between takes smaller requests); doubles back on success. */
  private limit: number | null = null;
  private waitingLogged = false;
  private skewLogged = false;
  shipped = 0;
  /** Records shipped in full batches since the last collection (a backlog draining). */
  private sinceCollect = 0;
  /** Records the control plane refused for now (clock skew) and that were kept to be sent again. */
  retried = 0;
  rejected = 0;
  /** Failed shipping calls since start, by status (`413`, `502`, …) or `network`: the metrics' svc_proxy_audit_ship_failures_total. */
  readonly failures = new Map<string, number>();
  /** The last shipping call failed (cleared by the next success): svc_proxy_audit_shipping_failing. */
  failing = false;
  private failureLogged: string | null = null;

  constructor(private readonly o: ShipperOptions) {}

  start(): void {
    this.loop ??= this.run();
    // A backlog indexed after the start (the spool's loadInBackground) ships once it is in.
    void this.o.spool.loaded.then(
      () => this.wake(),
      () => this.wake(),
    );
  }

  /** New records are in the spool. */
  wake(): void {
    this.wakeUp?.();
  }

  /** Try again now, ending a backoff wait (after bootstrap succeeded). */
  resume(): void {
    this.backoffMs = 0;
    this.interrupt?.();
    this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    if (this.sleepTimer) clearTimeout(this.sleepTimer);
    await this.loop;
  }

  /** Ship what is spooled, until empty or the deadline; returns what is left. Used at SIGTERM. */
  async drain(deadlineMs: number): Promise<number> {
    await this.stop();
    const end = Date.now() + deadlineMs;
    while (this.o.spool.depth > 0 && Date.now() < end) {
      const ok = await this.attempt();
      if (!ok) await Bun.sleep(Math.min(200, Math.max(0, end - Date.now())));
    }
    return this.o.spool.depth;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (this.o.spool.spooled === 0) {
        await new Promise<void>((r) => {
          this.wakeUp = r;
        });
        this.wakeUp = null;
        continue;
      }
      await this.linger();
      const ok = await this.attempt();
      if (ok) {
        this.backoffMs = 0;
        continue;
      }
      const initial = this.o.initialBackoffMs ?? 500;
      this.backoffMs = this.backoffMs === 0 ? initial : Math.min(this.backoffMs * 2, this.o.maxBackoffMs ?? 30_000);
      const delay = Math.round(this.backoffMs * (0.8 + 0.4 * (this.o.random ?? Math.random)()));
      await new Promise<void>((r) => {
        this.sleepTimer = setTimeout(r, delay);
        this.wakeUp = () => (this.stopped ? r() : undefined);
        this.interrupt = r;
      });
      if (this.sleepTimer) clearTimeout(this.sleepTimer);
      this.wakeUp = null;
      this.interrupt = null;
    }
  }

  /** Wait up to lingerMs for a full batch; stop() and a full batch end the wait early. */
  private async linger(): Promise<void> {
    const ms = this.o.lingerMs ?? DEFAULT_LINGER_MS;
    const full = this.o.batchSize ?? 500;
    if (ms <= 0 || this.stopped || this.o.spool.spooled >= full) return;
    await new Promise<void>((r) => {
      this.sleepTimer = setTimeout(r, ms);
      this.wakeUp = () => {
        if (this.stopped || this.o.spool.spooled >= full) r();
      };
    });
    if (this.sleepTimer) clearTimeout(this.sleepTimer);
    this.wakeUp = null;
  }

  /**
   * One batch; a failure of the spool itself (reading a segment, writing rejected.jsonl on a
   * full disk) is logged and retried with backoff like a failed call, never ends the loop.
   */
  private async attempt(): Promise<boolean> {
    try {
      return await this.shipBatch();
    } catch (e) {
      if (this.backoffMs === 0) this.o.log.warn("audit shipping failed in the spool; retrying with backoff", { error: (e as Error).message, spool_depth: this.o.spool.depth });
      return false;
    }
  }

  /** Move records to rejected.jsonl (acknowledging them), with one warning naming them. */
  private async setAside(entries: SetAside[], why: string): Promise<void> {
    if (entries.length === 0) return;
    await this.o.spool.reject(entries);
    this.rejected += entries.length;
    this.o.log.warn(`audit records set aside: ${why}; kept in the spool's rejected.jsonl, not shipped`, {
      count: entries.length,
      ids: entries.map((e) => e.record.id).join(","),
      reasons: [...new Set(entries.map((e) => e.reason))].slice(0, 5).join(" | "),
      spool_depth: this.o.spool.depth,
    });
  }

  private async shipBatch(): Promise<boolean> {
    const full = this.o.batchSize ?? 500;
    // Each with its spooled line: the batch is sent as those bytes (client.shipAudit), never re-serialized.
    let batch = await this.o.spool.unshippedLines(this.limit ?? full);
    if (batch.length === 0) return true;
    if (this.o.owner) {
      const owner = this.o.owner();
      if (!owner) {
        if (!this.waitingLogged) this.o.log.info("audit shipping waits for bootstrap", { spool_depth: this.o.spool.depth });
        this.waitingLogged = true;
        return false;
      }
      this.waitingLogged = false;
      const mine = (r: AuditRecord) => r.installation_id === owner.installationId && r.organization_id === owner.organizationId;
      const foreign = batch.filter((s) => !mine(s.record));
      if (foreign.length > 0) {
        await this.setAside(
          foreign.map(({ record: r, line }) => ({
            record: r,
            line,
            reason: `record of installation ${r.installation_id} (organization ${r.organization_id}); this proxy is installation ${owner.installationId}`,
          })),
          "they belong to another installation (a reused spool volume?)",
        );
        batch = batch.filter((s) => mine(s.record));
        if (batch.length === 0) return true;
      }
    }
    try {
      const res = await this.o.client.shipAudit(batch.map((s) => s.line));
      const byId = new Map(batch.map((s) => [s.record.id, s]));
      const acked = res.acknowledged.filter((id) => byId.has(id));
      const ackedSet = new Set(acked);
      const notTaken = (res.rejected ?? []).filter((x) => byId.has(x.id) && !ackedSet.has(x.id));
      const later = notTaken.filter(isRetryableRejection);
      const refused = notTaken.filter((x) => !isRetryableRejection(x));
      await this.o.spool.ack(acked);
      this.shipped += acked.length;
      if (batch.length >= (this.limit ?? full)) this.draining(acked.length);
      if (this.failing && this.failureLogged !== null) this.o.log.info("audit shipping works again", { spool_depth: this.o.spool.depth });
      this.failing = false;
      this.failureLogged = null;
      this.o.log.info("audit records shipped", { count: acked.length, inserted: res.inserted, duplicates: res.duplicates, spool_depth: this.o.spool.depth });
      await this.setAside(
        refused.map((x) => ({ ...byId.get(x.id)!, reason: x.reason })),
        "the control plane rejected them",
      );
      if (this.limit !== null) this.limit = this.limit * 2 >= full ? null : this.limit * 2;
      if (later.length > 0) {
        // Kept in the spool and sent again after a backoff: the control plane takes them once its
        // clock catches up (clock_skew), or once it is upgraded to know their fields (unsupported_field).
        this.retried += later.length;
        if (!this.skewLogged) {
          const newer = later.some((x) => x.code === "unsupported_field");
          const event = newer
            ? "audit records carry fields the control plane does not know; kept and sent again later: upgrade the control plane (docs/upgrade.md)"
            : "audit records dated ahead of the control plane's clock; kept and sent again later: check the runtime's clock (the console shows its skew)";
          this.o.log.warn(event, { count: later.length, first: later[0]!.reason.slice(0, 300), spool_depth: this.o.spool.depth });
        }
        this.skewLogged = true;
        return false;
      }
      this.skewLogged = false;
      const settled = acked.length + refused.length;
      if (settled < batch.length) {
        this.o.log.warn("control plane acknowledged part of a batch", { sent: batch.length, acknowledged: acked.length, rejected: refused.length });
        return settled > 0;
      }
      return true;
    } catch (e) {
      return this.failed(e, batch.length);
    }
  }

  /**
   * Records of a full batch were shipped: while a backlog drains, collect garbage every
   * COLLECT_EVERY_RECORDS of them. A backlog is at least that many records still waiting after
   * this batch: under a steady load the shipper keeps up (full batches, but nothing behind
   * them) and a synchronous collection every few seconds would only pause decisions.
   */
  private draining(records: number): void {
    const every = this.o.collectEveryRecords ?? COLLECT_EVERY_RECORDS;
    if (every <= 0) return;
    if (this.o.spool.depth < every) {
      this.sinceCollect = 0;
      return;
    }
    this.sinceCollect += records;
    if (this.sinceCollect < every) return;
    this.sinceCollect = 0;
    (this.o.collect ?? (() => Bun.gc(true)))();
  }

  /** A failed call, whatever its status: nothing is set aside; the batch is sent again (with backoff, or halved after a 413). */
  private failed(e: unknown, sent: number): boolean {
    const kind = failureKind(e);
    this.failures.set(kind, (this.failures.get(kind) ?? 0) + 1);
    this.failing = true;
    if (this.o.onError?.(e)) {
      if (this.backoffMs === 0) this.o.log.warn("audit shipping paused: the runtime credential was refused; records stay in the spool", { spool_depth: this.o.spool.depth });
      return false;
    }
    if (kind === "413" && sent > 1) {
      // Smaller requests may pass what refused this one; the records stay spooled either way.
      this.limit = Math.ceil(sent / 2);
      this.o.log.warn("audit batch refused as too large (413); sending smaller batches, nothing set aside", { sent, next: this.limit, error: (e as Error).message.slice(0, 300) });
      return true;
    }
    if (this.failureLogged !== kind) {
      // Once per streak and kind: the whole request was refused, so no record is blamed.
      this.o.log.warn("audit shipping failed for the whole batch; records stay in the spool and are sent again with backoff", {
        status: kind,
        error: (e as Error).message.slice(0, 300),
        spool_depth: this.o.spool.depth,
      });
      this.failureLogged = kind;
    }
    return false;
  }
}
