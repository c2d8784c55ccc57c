// Spans of the control plane (issue 35; the tracing module is ../tracing/index.ts, shared with
// the proxy): one per audit batch a runtime ships (`svc.audit.ingest`, a server span under the
// request's `traceparent` when it sends one) and one per batch sent to a SIEM sink
// (`svc.siem.deliver`, a client span of its own trace). Counts, ids, the sink's kind and format;
// never a record's content. Tracing off (OTEL_* unset, the default): the work runs as is.
import { ROOT_CONTEXT, SpanKind } from "@opentelemetry/api";
import type { AuditBatchResponse } from "../contract/runtime-api.ts";
import { NO_TRACING } from "../tracing/index.ts";
import type { ControlPlaneDeps } from "./deps.ts";

/** One ingest batch of `records` records from `installationId`, under the request's trace context. */
export async function traceIngest(deps: ControlPlaneDeps, headers: Headers, installationId: string, records: number, fn: () => Promise<AuditBatchResponse>): Promise<AuditBatchResponse> {
  const t = deps.tracing;
  if (!t || t === NO_TRACING) return fn();
  return t.span("svc.audit.ingest", t.incoming(headers), { kind: SpanKind.SERVER, attributes: { "svc.installation.id": installationId, "svc.audit.batch.records": records } }, async (span) => {
    const r = await fn();
    span.setAttributes({ "svc.audit.batch.inserted": r.inserted, "svc.audit.batch.duplicates": r.duplicates, "svc.audit.batch.rejected": r.rejected?.length ?? 0 });
    return r;
  });
}

/** One batch of `records` records sent to a sink; a failed send marks the span with the error and is thrown on. */
export async function traceDelivery(deps: ControlPlaneDeps, sink: { id: string; orgId: string; kind: string; format: string }, records: number, fn: () => Promise<void>): Promise<void> {
  const t = deps.tracing;
  if (!t || t === NO_TRACING) return fn();
  const attributes = { "svc.sink.id": sink.id, "svc.organization.id": sink.orgId, "svc.sink.kind": sink.kind, "svc.sink.format": sink.format, "svc.siem.batch.records": records };
  return t.span("svc.siem.deliver", ROOT_CONTEXT, { kind: SpanKind.CLIENT, attributes }, async () => fn());
}
