// The decision log is the audit record; the process log gets one summary line per interval
// instead of a line per decision (a synchronous JSON line per decision was ~10 % of the
// proxy's CPU, copied again by the supervisor). The line counts decisions by kind and outcome
// and names the refusal codes seen; ids and arguments stay in the audit records.
import type { Logger } from "../../log/index.ts";

export const DECISION_SUMMARY_MS = 60_000;

export class DecisionSummary {
  private counts = new Map<string, number>();
  private denyCodes = new Map<string, number>();
  private since = Date.now();
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly o: { log: Logger; intervalMs?: number }) {}

  /** Count one decision; starts the summary timer on the first one. */
  note(kind: string, decision: string, code: string | null): void {
    const key = `${kind}_${decision}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    if (code) this.denyCodes.set(code, (this.denyCodes.get(code) ?? 0) + 1);
    if (!this.timer) {
      this.timer = setInterval(() => this.flush(), this.o.intervalMs ?? DECISION_SUMMARY_MS);
      this.timer.unref?.();
    }
  }

  /** Log the counts since the last line (nothing when there were none) and start over. */
  flush(): void {
    if (this.counts.size === 0) return;
    const now = Date.now();
    const codes = [...this.denyCodes].map(([c, n]) => `${c}=${n}`).join(",");
    this.o.log.info("decisions", { seconds: Math.round((now - this.since) / 1000), ...Object.fromEntries(this.counts), ...(codes ? { refusal_codes: codes } : {}) });
    this.counts = new Map();
    this.denyCodes = new Map();
    this.since = now;
  }

  /** Log what is left and stop the timer (daemon shutdown). */
  stop(): void {
    this.flush();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
