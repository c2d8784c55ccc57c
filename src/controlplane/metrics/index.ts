// The control plane's Prometheus metrics (issue 16; docs/controlplane.md "Metrics"): GET
// /metrics with `Authorization: Bearer $SVC_CP_METRICS_TOKEN`, served only when that variable
// is set (a control plane is often reachable from the internet, and a reverse proxy on the same
// host would make "loopback only" meaningless). Counters are per replica: Prometheus sums them.
// Ingest counts what the runtimes ship: records by kind and result (the decisions of every
// installation), tokens and cost, batches; HTTP requests by route and status with a latency
// histogram.
import { Elysia } from "elysia";
import { type AuditRecord, reasonCode } from "../../contract/audit.ts";
import { bearer, safeEqual } from "../../contract/bearer.ts";
import { Counter, FAST_SECONDS, Gauge, Histogram, Registry } from "../../metrics/index.ts";
import type { CheckpointerHealth } from "../db/checkpointer.ts";

export const METRICS_PATH = "/metrics";

export class ControlPlaneMetrics {
  readonly registry = new Registry();
  private readonly records = this.registry.add(new Counter("svc_cp_audit_records_total", "Audit records received from runtimes, by what became of them (inserted, duplicate, rejected).", ["status"]));
  private readonly batches = this.registry.add(new Counter("svc_cp_audit_batches_total", "Audit batches received from runtimes."));
  private readonly decisions = this.registry.add(
    new Counter("svc_cp_decisions_total", "Decisions ingested (every installation), by kind (tool, model) and result (permit, or the refusal code).", ["kind", "result"]),
  );
  private readonly tokens = this.registry.add(new Counter("svc_cp_model_tokens_total", "Model tokens ingested, by type (prompt, completion).", ["type"]));
  private readonly cost = this.registry.add(new Counter("svc_cp_model_cost_total", "Model cost ingested, at the profiles' prices."));
  private readonly requests = this.registry.add(new Counter("svc_cp_http_requests_total", "HTTP requests by method, route and status.", ["method", "route", "status"]));
  private readonly latency = this.registry.add(new Histogram("svc_cp_http_request_duration_seconds", "HTTP request duration by route.", FAST_SECONDS, ["route"]));

  /**
   * The SQLite checkpoint worker (db/checkpointer.ts) of this replica: whether it runs, and how
   * often it died and was started again. Nothing is shown on PostgreSQL (no worker).
   */
  watchCheckpoints(health: () => CheckpointerHealth): void {
    this.registry.add(
      new Gauge("svc_cp_sqlite_checkpoint_worker_up", "1 while the SQLite checkpoint worker runs; 0 while it waits to be started again (only the backstop checkpoints).", () =>
        health().running ? 1 : 0,
      ),
    );
    this.registry.add(new Gauge("svc_cp_sqlite_checkpoint_worker_restarts_total", "How often the SQLite checkpoint worker died and was started again.", () => health().restarts, [], "counter"));
  }

  /** An ingested batch: its records stored now (new), and the counts of its answer. */
  ingested(fresh: readonly AuditRecord[], answer: { duplicates: number; rejected: number }): void {
    this.batches.inc();
    this.records.inc(fresh.length, "inserted");
    if (answer.duplicates) this.records.inc(answer.duplicates, "duplicate");
    if (answer.rejected) this.records.inc(answer.rejected, "rejected");
    for (const r of fresh) {
      if (r.kind !== "outcome") this.decisions.inc(1, r.kind, r.decision === "permit" ? "permit" : reasonCode(r.reason));
      else if (r.prompt_tokens !== undefined) {
        this.tokens.inc(r.prompt_tokens, "prompt");
        this.tokens.inc(r.completion_tokens ?? 0, "completion");
        if (r.cost !== undefined) this.cost.inc(r.cost);
      }
    }
  }

  request(method: string, route: string, status: number, seconds: number): void {
    this.requests.inc(1, method, route, String(status));
    this.latency.observe(seconds, route);
  }

  /** request() for one method, route and status, its series looked up once (a hot path's answer). */
  requestSeries(method: string, route: string, status: number): (seconds: number) => void {
    const count = this.requests.labels(method, route, String(status));
    const time = this.latency.labels(route);
    return (seconds) => {
      count.inc();
      time.observe(seconds);
    };
  }
}

/** GET /metrics (bearer SVC_CP_METRICS_TOKEN), and the request counter on every route. */
export function metricsPlugin(metrics: ControlPlaneMetrics, token: string | undefined) {
  const started = new WeakMap<Request, number>();
  return new Elysia({ name: "metrics" })
    .onRequest(({ request }) => void started.set(request, performance.now()))
    .onAfterResponse({ as: "global" }, ({ request, route, set }) => {
      const t0 = started.get(request);
      if (t0 === undefined) return;
      // The route's pattern (/api/v1/organizations/:org/…), never the path: bounded labels, no ids.
      metrics.request(request.method, route || "unmatched", typeof set.status === "number" ? set.status : 200, (performance.now() - t0) / 1000);
    })
    .get(
      METRICS_PATH,
      async ({ request, set }) => {
        const given = bearer(request.headers.get("authorization"));
        if (!token) {
          set.status = 404;
          return "metrics are off: set SVC_CP_METRICS_TOKEN to serve them\n";
        }
        if (given === null || !safeEqual(given, token)) {
          set.status = 401;
          set.headers["www-authenticate"] = "Bearer";
          return "metrics need Authorization: Bearer <SVC_CP_METRICS_TOKEN>\n";
        }
        return metrics.registry.response();
      },
      { detail: { hide: true } },
    );
}
