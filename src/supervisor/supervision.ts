// What keeps the container's processes together (ARCHITECTURE.md "Processes in the
// container", last row): every child the supervisor starts is registered here, so that
// SIGTERM/SIGINT are forwarded to all of them, the death of a watched child stops the rest,
// and nothing is left running when `svc run` returns (Bun does not kill children itself).
//
// The stop has a fixed budget (docs/deploy.md "Stopping"), whatever the number of children:
//   1. the seed and the front end get the forwarded signal together (newest first) and share
//      STOP_GRACE_MS; whoever is still running then is SIGKILLed;
//   2. then the proxy daemon gets it, with DRAIN_GRACE_MS to drain its audit spool (it gives
//      itself DRAIN_DEADLINE_MS, 5 s, in src/proxy/daemon.ts), then SIGKILL.
// A second SIGTERM/SIGINT escalates: the seed and the front end are SIGKILLed at once, and the
// proxy gets LAST_CHANCE_MS more (counted from when it is signalled, if it had not been yet),
// then SIGKILL. The proxy is never sent a second signal: it would only log that it is already
// draining (src/proxy/command.ts), and the last chance is bounded by the SIGKILL. Every decision it
// answered is already fsynced (records are written durably before the answer), so the last
// chance only lets a group commit in flight land and the spool close; what is unshipped ships
// after the next start.
import type { Logger } from "../log/index.ts";
import { type Child, type ChildOptions, TIMEOUT, startChild, withTimeout } from "./children.ts";

export const STOP_GRACE_MS = 10_000;
export const DRAIN_GRACE_MS = 10_000;
export const LAST_CHANCE_MS = 2_000;
/** The longest stop, from the first signal to the last child gone (but for a SIGKILL's own delay). */
export const STOP_BUDGET_MS = STOP_GRACE_MS + DRAIN_GRACE_MS;
const FORWARDED = ["SIGTERM", "SIGINT"] as const;
export type ForwardedSignal = (typeof FORWARDED)[number];

/** Where signals come from: the process, or a test's emitter. */
export type SignalSource = {
  on(sig: ForwardedSignal, fn: () => void): unknown;
  off(sig: ForwardedSignal, fn: () => void): unknown;
};

/** Thrown by guard() once a stop is requested (a signal, a dying child, a start failure). */
export class Stopped extends Error {
  override name = "Stopped";
}

export type StopReason = { code: number; why: string; signal?: ForwardedSignal };

export type SupervisionOptions = {
  log: Logger;
  /** null: install no handlers (the caller forwards signals through signal()). */
  signals?: SignalSource | null;
  stopGraceMs?: number;
  drainGraceMs?: number;
  lastChanceMs?: number;
  /** Starts a child; tests may wrap it. */
  start?: typeof startChild;
};

type Entry = { child: Child; drains: boolean; signalled: boolean };

export class Supervision {
  private readonly children: Entry[] = [];
  private reason: StopReason | null = null;
  private wake: () => void = () => {};
  private readonly handlers = new Map<ForwardedSignal, () => void>();
  private signalsReceived = 0;
  private escalated = false;
  private escalate: () => void = () => {};
  /** Resolves at the second signal: stop at once. */
  private readonly escalation: Promise<void>;
  private stopping: Promise<void> | null = null;
  /** Resolves once a stop is requested. */
  readonly stopped: Promise<void>;

  constructor(private readonly opts: SupervisionOptions) {
    this.stopped = new Promise<void>((resolve) => {
      this.wake = resolve;
    });
    this.escalation = new Promise<void>((resolve) => {
      this.escalate = resolve;
    });
    const source = opts.signals === undefined ? process : opts.signals;
    if (source) {
      for (const sig of FORWARDED) {
        const fn = () => this.signal(sig);
        this.handlers.set(sig, fn);
        source.on(sig, fn);
      }
    }
  }

  get stopReason(): StopReason | null {
    return this.reason;
  }

  /** The longest stop with these graces (STOP_BUDGET_MS by default). */
  get budgetMs(): number {
    return this.stopGraceMs + this.drainGraceMs;
  }

  private get stopGraceMs(): number {
    return this.opts.stopGraceMs ?? STOP_GRACE_MS;
  }

  private get drainGraceMs(): number {
    return this.opts.drainGraceMs ?? DRAIN_GRACE_MS;
  }

  /** Pids of the running children (the reaper leaves them to Bun). */
  pids(): number[] {
    return this.children.filter((c) => !c.child.hasExited()).map((c) => c.child.pid);
  }

  /**
   * Start a child and register it. `drains`: the proxy daemon, stopped last with the drain
   * grace. Refuses (throws Stopped) once a stop was requested, so nothing starts late.
   */
  start(name: string, argv: string[], opts: ChildOptions & { drains?: boolean }): Child {
    if (this.reason) throw new Stopped(`not starting ${name}: stopping (${this.reason.why})`);
    const child = (this.opts.start ?? startChild)(name, argv, opts);
    this.children.push({ child, drains: opts.drains === true, signalled: false });
    return child;
  }

  /** From now on this child's death stops the container (exit code 1). */
  watch(child: Child): void {
    void child.exited.then((code) => {
      if (!this.reason) {
        this.opts.log.error(`${child.name} exited (code ${code}); stopping`, { child: child.name, code });
        this.requestStop(1, `${child.name} exited`);
      }
    });
  }

  requestStop(code: number, why: string, signal?: ForwardedSignal): void {
    if (this.reason) return;
    this.reason = { code, why, ...(signal ? { signal } : {}) };
    this.wake();
  }

  /**
   * A signal arrived. The first stops everything, forwarding that signal to each child (or,
   * when a stop is already under way for another cause, lets it go on); the second stops at once.
   */
  signal(sig: ForwardedSignal): void {
    this.signalsReceived++;
    if (this.signalsReceived > 1) return this.stopAtOnce(sig);
    if (this.reason) {
      this.opts.log.info(`received ${sig}; already stopping (${this.reason.why}); another signal stops at once`);
      return;
    }
    this.opts.log.info(`received ${sig}; stopping the seed and the front end, then the proxy (it drains its audit spool), within ${this.budgetMs / 1000} s; another signal stops at once`);
    this.requestStop(0, sig, sig);
  }

  private stopAtOnce(sig: ForwardedSignal): void {
    if (this.escalated) {
      this.opts.log.info(`received ${sig} again; already stopping at once`);
      return;
    }
    this.escalated = true;
    const killed = this.children.filter((c) => !c.drains && !c.child.hasExited());
    const lastChance = this.opts.lastChanceMs ?? LAST_CHANCE_MS;
    this.opts.log.warn(
      `received ${sig} again: stopping at once${killed.length ? `; SIGKILL to ${killed.map((c) => c.child.name).join(", ")}` : ""}; the proxy gets ${lastChance / 1000} s to close its audit spool, then SIGKILL`,
    );
    for (const c of killed) c.child.signal("SIGKILL");
    this.escalate();
  }

  /** `p`, unless a stop is requested first: then rejects with Stopped. */
  async guard<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.stopped.then(async () => Promise.reject(new Stopped(this.reason?.why ?? "stopping")))]);
  }

  /**
   * Stop every child within the budget (see the top of this file), with the forwarded signal
   * (SIGTERM when the stop has another cause); then remove the signal handlers. Safe to call
   * more than once: every call waits for the same stop.
   */
  async shutdown(): Promise<void> {
    this.stopping ??= (async () => {
      const sig = this.reason?.signal ?? "SIGTERM";
      // A second signal SIGKILLs these itself (stopAtOnce), so it only ends the wait here.
      await this.stopGroup(this.children.filter((c) => !c.drains).reverse(), sig, this.stopGraceMs, { cut: this.escalation, why: null });
      const lastChance = this.opts.lastChanceMs ?? LAST_CHANCE_MS;
      const drainers = this.children.filter((c) => c.drains);
      const allDrained = Promise.all(drainers.map(async (c) => c.child.exited));
      await this.stopGroup(drainers, sig, this.drainGraceMs, {
        cut: this.escalation.then(async () => withTimeout(allDrained, lastChance)),
        why: `after its last ${lastChance / 1000} s`,
      });
      const source = this.opts.signals === undefined ? process : this.opts.signals;
      if (source) for (const [s, fn] of this.handlers) source.off(s, fn);
      this.handlers.clear();
    })();
    return this.stopping;
  }

  /**
   * Send `sig` to each running child of the group (once: never a second signal), wait for
   * them all until `graceMs` ends or `early.cut` resolves, then SIGKILL whoever is left
   * (logged with `early.why` when the cut came first, unless that is null).
   */
  private async stopGroup(group: Entry[], sig: ForwardedSignal, graceMs: number, early: { cut: Promise<unknown>; why: string | null }): Promise<void> {
    const running = group.filter((c) => !c.child.hasExited());
    if (running.length === 0) return;
    for (const c of running) {
      if (c.signalled) continue;
      c.signalled = true;
      c.child.signal(sig);
    }
    const all = Promise.all(running.map(async (c) => c.child.exited));
    const ended = await withTimeout(Promise.race([all, early.cut.then(() => "cut" as const)]), graceMs);
    const left = running.filter((c) => !c.child.hasExited());
    if (left.length) {
      const why = ended === TIMEOUT ? `after ${graceMs / 1000} s` : early.why;
      if (why) this.opts.log.warn(`${left.map((c) => c.child.name).join(", ")} still running ${why}; SIGKILL`);
      for (const c of left) c.child.signal("SIGKILL");
    }
    await all;
  }
}
