// A request the control plane has not answered within SLOW_REQUEST_MS is logged while it still
// runs, and again with its time once answered: an operator (or a failed test's log) sees which
// request waited, for how long, and whether it ever finished. Only the method and the loggable
// path are named (claim and consent links carry tokens in the path: log-path.ts).
// Every request passes here, the runtimes' bundle polls and ingest included: a request costs a
// set entry, and one timer per process looks over the requests in flight, instead of a timer each.
import type { Logger } from "../../log/index.ts";
import { loggablePath } from "./log-path.ts";

/** How long a request may take before it is logged; every route answers far faster. */
export const SLOW_REQUEST_MS = 10_000;

type InFlight = { request: Request; started: number; warned: boolean };

export type SlowRequests = {
  /** Call when `request` arrives; call the function it returns once it is answered. */
  watch(request: Request): () => void;
  /** Logs the requests in flight past the bound (the timer calls it; tests may too). */
  sweep(): void;
  stop(): void;
};

export function slowRequests(log: Pick<Logger, "warn">, afterMs: number = SLOW_REQUEST_MS): SlowRequests {
  const inFlight = new Set<InFlight>();
  const fields = (r: InFlight) => ({ method: r.request.method, path: loggablePath(new URL(r.request.url).pathname), ms: Math.round(performance.now() - r.started) });
  const sweep = () => {
    const now = performance.now();
    for (const r of inFlight)
      if (!r.warned && now - r.started >= afterMs) {
        r.warned = true;
        log.warn("request slow, still running", fields(r));
      }
  };
  // checked at a fraction of the bound: a request is named at most afterMs / 4 late
  const timer = setInterval(sweep, Math.max(10, afterMs / 4));
  // the process may exit while a request is still being answered
  timer.unref();
  return {
    watch(request) {
      const r: InFlight = { request, started: performance.now(), warned: false };
      inFlight.add(r);
      return () => {
        inFlight.delete(r);
        if (r.warned) log.warn("request slow, answered", fields(r));
      };
    },
    sweep,
    stop: () => clearInterval(timer),
  };
}
