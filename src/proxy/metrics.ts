// The proxy's Prometheus metrics (issue 16; docs/proxy.md "Metrics"). Decisions and model
// calls are counted from the audit records as the recorder writes them, so nothing is added
// to the local API's code path but one counter increment and one histogram observation per
// decision, on series looked up in nested maps (no allocation once a series exists). The
// rest is read when scraped: spool depth and the age of its oldest unshipped record, the
// bundle's age and revision, records shipped.
import { type AuditRecord, reasonCode } from "../contract/audit.ts";
import { idTime } from "../contract/ids.ts";
import { Counter, FAST_SECONDS, Gauge, Histogram, Registry, SLOW_SECONDS } from "../metrics/index.ts";
import type { ModelCallEnd } from "./pipeline/pipeline.ts";
import type { Route } from "./api/routes.ts";
import { sealCounters } from "./audit/age-seal.ts";
import type { AuditSpool } from "./audit/spool.ts";
import type { BudgetBook } from "./policy/budgets.ts";
import type { ProxyStatus } from "./policy/status.ts";

type Inc = { inc(n?: number): void };
type Observe = { observe(v: number): void };

/** Ids are time-ordered: the first 10 characters after `rec_` are the ULID's milliseconds. */
export const recordIdTime = (id: string): number | null => (id.startsWith("rec_") ? idTime(id) : null);

/** What the shipper reports (shipper.ts): failed calls by status, whether the last one failed, records set aside. */
export type ShippingHealth = { readonly failures: ReadonlyMap<string, number>; readonly failing: boolean; readonly rejected: number };

export class ProxyMetrics {
  readonly registry = new Registry();
  private readonly decisions = this.registry.add(new Counter("svc_proxy_decisions_total", "Decisions by kind (tool, model) and result (permit, or the refusal code).", ["kind", "result"]));
  private readonly decisionSeconds = this.registry.add(
    new Histogram("svc_proxy_decision_duration_seconds", "Time to make a decision's audit record durable (sealing, spool write and fdatasync), by kind.", FAST_SECONDS, ["kind"]),
  );
  private readonly upstreamSeconds = this.registry.add(
    new Histogram("svc_proxy_model_call_duration_seconds", "Model calls, from sending to the end of the answer, by model.", SLOW_SECONDS, ["model"]),
  );
  private readonly calls = this.registry.add(new Counter("svc_proxy_model_calls_total", "Permitted model calls that ended, by model and outcome (ok, error).", ["model", "outcome"]));
  private readonly tokens = this.registry.add(new Counter("svc_proxy_model_tokens_total", "Tokens the provider reported, by model and type (prompt, completion).", ["model", "type"]));
  private readonly cost = this.registry.add(new Counter("svc_proxy_model_cost_total", "Cost of model calls at the profile's prices, by model.", ["model"]));
  private readonly written = this.registry.add(new Counter("svc_proxy_audit_records_written_total", "Audit records made durable in the spool."));
  private readonly byKind = new Map<string, { seconds: Observe; results: Map<string, Inc> }>();
  private readonly writtenAll = this.written.labels();

  constructor(o: { spool: AuditSpool; status: ProxyStatus; shipped: () => number; shipping?: ShippingHealth; budgets?: BudgetBook; now?: () => number }) {
    const now = o.now ?? Date.now;
    const r = this.registry;
    r.add(new Gauge("svc_proxy_audit_records_shipped_total", "Audit records the control plane acknowledged since start.", () => o.shipped(), [], "counter"));
    const shipping = o.shipping;
    if (shipping) {
      r.add(
        new Gauge(
          "svc_proxy_audit_ship_failures_total",
          "Shipping calls refused or failed as a whole, by status (413, 502, …) or network: the records stay spooled and are sent again.",
          () => [...shipping.failures].map(([k, n]) => [[k], n] as [string[], number]),
          ["status"],
          "counter",
        ),
      );
      r.add(new Gauge("svc_proxy_audit_shipping_failing", "1 while the last shipping call failed (records wait in the spool), else 0.", () => (shipping.failing ? 1 : 0)));
      r.add(new Gauge("svc_proxy_audit_records_set_aside_total", "Audit records the control plane rejected for good (rejected.jsonl) since start.", () => shipping.rejected, [], "counter"));
    }
    r.add(new Gauge("svc_proxy_spool_depth", "Audit records not yet acknowledged by the control plane.", () => o.spool.depth));
    r.add(
      new Gauge("svc_proxy_spool_oldest_unshipped_age_seconds", "Age of the oldest audit record not yet acknowledged (0 when none).", async () => {
        if (o.spool.depth === 0) return 0;
        const [oldest] = await o.spool.unshipped(1);
        const t = oldest ? recordIdTime(oldest.id) : null;
        return t === null ? 0 : Math.max(0, (now() - t) / 1000);
      }),
    );
    r.add(new Gauge("svc_proxy_seal_inline_stanza_keys_total", "age X25519 stanza keys made on the event loop (0 while the sealing worker runs).", () => sealCounters.inlineStanzaKeys, [], "counter"));
    r.add(
      new Gauge("svc_proxy_bundle_age_seconds", "Seconds since the control plane last sent or confirmed the bundle in use (absent before the first).", () =>
        o.status.lastSuccess ? (now() - o.status.lastSuccess.getTime()) / 1000 : null,
      ),
    );
    r.add(new Gauge("svc_proxy_bundle_revision", "Revision of the bundle in use (absent when none).", () => o.status.compiled?.revision ?? null));
    const book = o.budgets;
    if (book) {
      r.add(new Gauge("svc_proxy_budgets", "Budgets this proxy enforces (absent until the control plane first answered).", () => (book.known ? book.size : null)));
      r.add(
        new Gauge("svc_proxy_budget_spent", "Spent in the current period, as this proxy counts it, by budget name.", () => book.views(now()).map((v) => [[v.name], v.spent] as [string[], number]), [
          "budget",
        ]),
      );
      r.add(new Gauge("svc_proxy_budget_limit", "The limit, by budget name.", () => book.views(now()).map((v) => [[v.name], v.limit] as [string[], number]), ["budget"]));
    }
    r.add(new Gauge("svc_proxy_ready", "1 when decisions are being made (ready or stale), 0 otherwise.", () => (o.status.readiness().ready ? 1 : 0)));
  }

  /** A record is durable in the spool: a decision's after `seconds` of sealing and writing. */
  recordWritten(record: AuditRecord, seconds: number | null): void {
    this.writtenAll.inc();
    if (seconds === null || record.kind === "outcome") return;
    let k = this.byKind.get(record.kind);
    if (!k) this.byKind.set(record.kind, (k = { seconds: this.decisionSeconds.labels(record.kind), results: new Map() }));
    k.seconds.observe(seconds);
    // Keyed by the reason as recorded; labelled by its code (a limit's refusal names the limit after the code).
    const result = record.decision === "permit" ? "permit" : record.reason;
    let c = k.results.get(result);
    if (!c) k.results.set(result, (c = this.decisions.labels(record.kind, reasonCode(result))));
    c.inc();
  }

  /** A permitted model call's answer ended. */
  modelCallEnded(e: ModelCallEnd): void {
    const model = e.record.model ?? "";
    this.calls.inc(1, model, e.ok ? "ok" : "error");
    this.upstreamSeconds.observe(e.durationMs / 1000, model);
    if (e.usage) {
      this.tokens.inc(e.usage.prompt_tokens, model, "prompt");
      this.tokens.inc(e.usage.completion_tokens, model, "completion");
    }
    if (e.cost !== undefined) this.cost.inc(e.cost, model);
  }
}

export const METRICS_PATH = "/metrics";

/** GET /metrics on the local API's socket, with the runtime token like every route but /readyz. */
export function metricsRoute(metrics: ProxyMetrics): Route {
  return { method: "GET", path: METRICS_PATH, handler: async () => metrics.registry.response() };
}

/** The optional TCP listener (SVC_PROXY_METRICS_LISTEN): GET /metrics only, no token, nothing else. */
export function serveMetrics(metrics: ProxyMetrics, at: { hostname: string; port: number }) {
  return Bun.serve({
    hostname: at.hostname,
    port: at.port,
    fetch: async (req) => {
      const path = new URL(req.url).pathname;
      if (path !== METRICS_PATH) return new Response("only /metrics is served here\n", { status: 404 });
      if (req.method !== "GET" && req.method !== "HEAD") return new Response(null, { status: 405, headers: { allow: "GET, HEAD" } });
      return metrics.registry.response();
    },
  });
}
