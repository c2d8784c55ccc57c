// The audit shipper: sends spooled records in batches to POST /api/v1/runtime/audit-records
// and drops them from the spool only once the control plane acknowledged them by id. On a
// failure it retries with exponential backoff and jitter. The control plane deduplicates by
// record id, so a batch resent after a crash or a lost answer is harmless.
// Records are durable in the spool before anyone waits on shipping, so the shipper lets a
// batch gather for a short linger instead of sending each record as it lands: one round trip,
// one control-plane commit and one ack fsync per batch rather than per decision.
import type { Logger } from "../log/index.ts";
import type { ControlPlaneClient } from "./control-plane-client.ts";
import type { AuditSpool } from "./spool.ts";

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
};

export const DEFAULT_LINGER_MS = 200;

export class AuditShipper {
  private wakeUp: (() => void) | null = null;
  private stopped = false;
  private loop: Promise<void> | null = null;
  private backoffMs = 0;
  private sleepTimer: ReturnType<typeof setTimeout> | null = null;
  shipped = 0;

  constructor(private readonly o: ShipperOptions) {}

  start(): void {
    this.loop ??= this.run();
  }

  /** New records are in the spool. */
  wake(): void {
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
      const ok = await this.shipBatch();
      if (!ok) await Bun.sleep(Math.min(200, Math.max(0, end - Date.now())));
    }
    return this.o.spool.depth;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (this.o.spool.unshipped(1).length === 0) {
        await new Promise<void>((r) => {
          this.wakeUp = r;
        });
        this.wakeUp = null;
        continue;
      }
      await this.linger();
      const ok = await this.shipBatch();
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
      });
      this.wakeUp = null;
    }
  }

  /** Wait up to lingerMs for a full batch; stop() and a full batch end the wait early. */
  private async linger(): Promise<void> {
    const ms = this.o.lingerMs ?? DEFAULT_LINGER_MS;
    const full = this.o.batchSize ?? 500;
    if (ms <= 0 || this.stopped || this.o.spool.depth >= full) return;
    await new Promise<void>((r) => {
      this.sleepTimer = setTimeout(r, ms);
      this.wakeUp = () => {
        if (this.stopped || this.o.spool.depth >= full) r();
      };
    });
    if (this.sleepTimer) clearTimeout(this.sleepTimer);
    this.wakeUp = null;
  }

  private async shipBatch(): Promise<boolean> {
    const batch = this.o.spool.unshipped(this.o.batchSize ?? 500);
    if (batch.length === 0) return true;
    try {
      const res = await this.o.client.shipAudit(batch);
      const sent = new Set(batch.map((r) => r.id));
      const acked = res.acknowledged.filter((id) => sent.has(id));
      await this.o.spool.ack(acked);
      this.shipped += acked.length;
      this.o.log.info("audit records shipped", { count: acked.length, inserted: res.inserted, duplicates: res.duplicates, spool_depth: this.o.spool.depth });
      if (acked.length < batch.length) {
        this.o.log.warn("control plane acknowledged part of a batch", { sent: batch.length, acknowledged: acked.length });
        return acked.length > 0;
      }
      return true;
    } catch (e) {
      if (this.backoffMs === 0) this.o.log.warn("audit shipping failed; retrying with backoff", { error: (e as Error).message, spool_depth: this.o.spool.depth });
      return false;
    }
  }
}
