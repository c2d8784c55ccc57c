// A request the control plane has not answered within SLOW_REQUEST_MS is logged while it still
// runs, and again with its time once answered: an operator (or a failed test's log) sees which
// request waited, for how long, and whether it ever finished. Only the method and the loggable
// path are named (claim and consent links carry tokens in the path: log-path.ts).
import type { Logger } from "../../log/index.ts";
import { loggablePath } from "./log-path.ts";

/** How long a request may take before it is logged; every route answers far faster. */
export const SLOW_REQUEST_MS = 10_000;

export type SlowRequestWatch = { done(): void };

export function watchSlowRequest(log: Pick<Logger, "warn">, request: Request, afterMs: number = SLOW_REQUEST_MS): SlowRequestWatch {
  const started = performance.now();
  const fields = () => ({ method: request.method, path: loggablePath(new URL(request.url).pathname), ms: Math.round(performance.now() - started) });
  let warned = false;
  const timer = setTimeout(() => {
    warned = true;
    log.warn("request slow, still running", fields());
  }, afterMs);
  // the process may exit while a request is still being answered
  timer.unref();
  return {
    done() {
      clearTimeout(timer);
      if (warned) log.warn("request slow, answered", fields());
    },
  };
}
