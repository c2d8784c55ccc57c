// What keeps the container's processes together (ARCHITECTURE.md "Processes in the
// container", last row): every child the supervisor starts is registered here, so that
// SIGTERM/SIGINT are forwarded to all of them, the death of a watched child stops the rest,
// and nothing is left running when `svc run` returns (Bun does not kill children itself).
// Stop order: the newest child first (the seed, then the front end), the proxy daemon last,
// with a longer grace so it can drain its audit spool.
import type { Logger } from "../log/index.ts";
import { type Child, type ChildOptions, startChild } from "./children.ts";

export const STOP_GRACE_MS = 15_000;
export const DRAIN_GRACE_MS = 30_000;
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
  /** Starts a child; tests may wrap it. */
  start?: typeof startChild;
};

export class Supervision {
  private readonly children: { child: Child; drains: boolean }[] = [];
  private reason: StopReason | null = null;
  private wake: () => void = () => {};
  private readonly handlers = new Map<ForwardedSignal, () => void>();
  /** Resolves once a stop is requested. */
  readonly stopped: Promise<void>;

  constructor(private readonly opts: SupervisionOptions) {
    this.stopped = new Promise<void>((resolve) => {
      this.wake = resolve;
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
    this.children.push({ child, drains: opts.drains === true });
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

  /** A signal arrived: stop everything, forwarding that signal to each child. */
  signal(sig: ForwardedSignal): void {
    if (this.reason) {
      this.opts.log.info(`received ${sig} again; already stopping (${this.reason.why})`);
      return;
    }
    this.opts.log.info(`received ${sig}; stopping the front end, then the proxy (it drains its audit spool)`);
    this.requestStop(0, sig, sig);
  }

  /** `p`, unless a stop is requested first: then rejects with Stopped. */
  guard<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.stopped.then(() => Promise.reject(new Stopped(this.reason?.why ?? "stopping")))]);
  }

  /**
   * Stop every child: the newest first, each with the forwarded signal (SIGTERM when the stop
   * has another cause) and the stop grace; the draining ones last, with the drain grace. Then
   * remove the signal handlers. Safe to call more than once.
   */
  async shutdown(): Promise<void> {
    const sig = this.reason?.signal ?? "SIGTERM";
    const order = [...this.children.filter((c) => !c.drains).reverse(), ...this.children.filter((c) => c.drains)];
    for (const { child, drains } of order) {
      await child.stop(drains ? (this.opts.drainGraceMs ?? DRAIN_GRACE_MS) : (this.opts.stopGraceMs ?? STOP_GRACE_MS), sig);
    }
    const source = this.opts.signals === undefined ? process : this.opts.signals;
    if (source) for (const [sig, fn] of this.handlers) source.off(sig, fn);
    this.handlers.clear();
  }
}
