// Polls GET /runtime/limits (issue 16) every SVC_PROXY_LIMITS_INTERVAL (default 15 s) into
// the budget book. A failed poll keeps the last answer (and this replica's own counting): the
// proxy goes on enforcing what it knew. A control plane without the endpoint (404, older
// than issue 16) means no budgets; polling continues, so an upgrade is picked up.
import type { Logger } from "../../log/index.ts";
import type { BudgetBook } from "../policy/budgets.ts";
import { type ControlPlaneClient, ControlPlaneError } from "./control-plane-client.ts";

export class LimitsPoll {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  private failing = false;
  private running: Promise<void> | null = null;

  constructor(
    private readonly o: {
      client: Pick<ControlPlaneClient, "limits">;
      book: BudgetBook;
      log: Logger;
      intervalMs: number;
      /** Only poll once the proxy knows who it is (bootstrapped). */
      ready: () => boolean;
      onError?: (e: unknown) => void;
    },
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** One poll now (tests, and after bootstrap). */
  async pollNow(): Promise<void> {
    this.running ??= this.poll().finally(() => (this.running = null));
    return this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.pollNow().finally(() => this.schedule(this.o.intervalMs)), ms);
    this.timer.unref?.();
  }

  private async poll(): Promise<void> {
    if (!this.o.ready()) return;
    const mark = this.o.book.mark();
    try {
      const answer = await this.o.client.limits();
      this.o.book.update(answer.budgets, mark);
      if (this.failing) this.o.log.info("budgets fetched again", { budgets: answer.budgets.length });
      this.failing = false;
    } catch (e) {
      if (e instanceof ControlPlaneError && e.status === 404) {
        this.o.book.update([], mark);
        return;
      }
      this.o.onError?.(e);
      if (!this.failing) this.o.log.warn("budgets not fetched; enforcing the last known spend", { error: (e as Error).message });
      this.failing = true;
    }
  }
}
