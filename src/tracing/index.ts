// OpenTelemetry traces of the proxy and the control plane (issue 35), off by default: spans for
// the governed call, its decision and the durable write of its record, the model forward and the
// MCP calls (proxy), and audit ingest and SIEM delivery (control plane), exported by OTLP/HTTP
// (JSON) with the OpenTelemetry JS SDK. Switched on by the standard variables (the SDK of this
// version no longer reads them itself, so `tracingConfig` does, pure): OTEL_TRACES_EXPORTER
// (`otlp`, or `none`), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT
// (+ /v1/traces), OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER
// and OTEL_TRACES_SAMPLER_ARG, OTEL_SDK_DISABLED. Nothing is exported unless an endpoint is set.
// The W3C `traceparent` of an incoming request is the parent of the call's span, and the model
// forward passes its own on. Spans carry the policy id and effect, never arguments.
import { type Attributes, type Context, INVALID_SPAN_CONTEXT, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, type Sampler, TraceIdRatioBasedSampler, TracerProvider } from "@opentelemetry/sdk-trace";
import { VERSION } from "../version.ts";

export type TracingConfig = { url: string; headers: Record<string, string>; serviceName: string; sampler: { name: string; ratio: number } };

const SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"];

/** `k=v,k2=v2` (OTLP headers, values percent-decoded). */
function headerList(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (raw ?? "").split(",")) {
    const i = pair.indexOf("=");
    if (i > 0) out[pair.slice(0, i).trim()] = decodeURIComponent(pair.slice(i + 1).trim());
  }
  return out;
}

/**
 * Tracing's settings from the environment, null when it is off: no endpoint, OTEL_SDK_DISABLED,
 * or OTEL_TRACES_EXPORTER other than `otlp`. Returns a problem (in words) for a value it cannot use. Pure.
 */
export function tracingConfig(env: Record<string, string | undefined>, defaultService = "svc-proxy"): TracingConfig | null | { problem: string } {
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === "true") return null;
  const exporter = env.OTEL_TRACES_EXPORTER ?? "otlp";
  if (exporter === "none") return null;
  if (exporter !== "otlp") return { problem: `OTEL_TRACES_EXPORTER=${exporter}: only otlp (or none) is supported` };
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (base ? `${base.replace(/\/+$/, "")}/v1/traces` : undefined);
  if (!url) return null;
  if (!/^https?:\/\//.test(url)) return { problem: `the OTLP traces endpoint "${url}" is not an http(s) URL` };
  const name = env.OTEL_TRACES_SAMPLER ?? "parentbased_always_on";
  if (!SAMPLERS.includes(name)) return { problem: `OTEL_TRACES_SAMPLER=${name}: one of ${SAMPLERS.join(", ")}` };
  const ratio = env.OTEL_TRACES_SAMPLER_ARG === undefined ? 1 : Number(env.OTEL_TRACES_SAMPLER_ARG);
  if (!(ratio >= 0 && ratio <= 1)) return { problem: `OTEL_TRACES_SAMPLER_ARG=${env.OTEL_TRACES_SAMPLER_ARG}: a ratio from 0 to 1` };
  return {
    url,
    headers: { ...headerList(env.OTEL_EXPORTER_OTLP_HEADERS), ...headerList(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) },
    serviceName: env.OTEL_SERVICE_NAME ?? defaultService,
    sampler: { name, ratio },
  };
}

/** The endpoint tracing exports to (for the start-up log line), or "". Pure. */
export function tracingConfigUrl(env: Record<string, string | undefined>): string {
  const c = tracingConfig(env);
  return c && !("problem" in c) ? c.url : "";
}

function samplerOf(s: TracingConfig["sampler"]): Sampler {
  const root = s.name.endsWith("always_off") ? new AlwaysOffSampler() : s.name.endsWith("traceidratio") ? new TraceIdRatioBasedSampler(s.ratio) : new AlwaysOnSampler();
  return s.name.startsWith("parentbased_") ? new ParentBasedSampler({ root }) : root;
}

const propagator = new W3CTraceContextPropagator();
const headerGetter = {
  keys: (h: Headers) => {
    const keys: string[] = [];
    h.forEach((_v, k) => keys.push(k));
    return keys;
  },
  get: (h: Headers, k: string) => h.get(k) ?? undefined,
};
const recordSetter = { set: (carrier: Record<string, string>, k: string, v: string) => void (carrier[k] = v) };

/** What the code asks of tracing; the same calls whether it is on or off (off: no-op spans). */
export type Tracing = {
  /** The context of an incoming request: its `traceparent`'s, or none. */
  incoming(headers: Headers): Context;
  /** Runs `fn` in a span, a child of `parent`; the span ends when fn settles (an error marks it). */
  span<T>(name: string, parent: Context, o: { kind?: SpanKind; attributes?: Attributes }, fn: (span: Span, ctx: Context) => Promise<T>): Promise<T>;
  /** A span the caller ends (a model answer, streamed after the handler returned). */
  start(name: string, parent: Context, o: { kind?: SpanKind; attributes?: Attributes }): { span: Span; ctx: Context };
  /** The `traceparent` (and `tracestate`) headers that pass ctx on to an upstream. */
  outgoing(ctx: Context): Record<string, string>;
  /** Exports what is left (shutdown). */
  shutdown(): Promise<void>;
};

function tracingWith(tracer: Tracer, shutdown: () => Promise<void>): Tracing {
  const start: Tracing["start"] = (name, parent, o) => {
    const span = tracer.startSpan(name, { kind: o.kind ?? SpanKind.INTERNAL, ...(o.attributes ? { attributes: o.attributes } : {}) }, parent);
    return { span, ctx: trace.setSpan(parent, span) };
  };
  return {
    incoming: (headers) => propagator.extract(ROOT_CONTEXT, headers, headerGetter),
    start,
    async span(name, parent, o, fn) {
      const { span, ctx } = start(name, parent, o);
      try {
        return await fn(span, ctx);
      } catch (e) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error).message });
        throw e;
      } finally {
        span.end();
      }
    },
    outgoing(ctx) {
      const carrier: Record<string, string> = {};
      propagator.inject(ctx, carrier, recordSetter);
      return carrier;
    },
    shutdown,
  };
}

/**
 * Tracing off: spans that record nothing, but a request's `traceparent` is still passed on. A
 * request without one costs a header lookup and nothing else (the decision's hot path).
 */
const off = tracingWith(trace.getTracer("svc-proxy-off"), async () => undefined);
const NOOP = { span: trace.wrapSpanContext(INVALID_SPAN_CONTEXT), ctx: ROOT_CONTEXT };
export const NO_TRACING: Tracing = {
  incoming: (headers) => (headers.has("traceparent") ? off.incoming(headers) : ROOT_CONTEXT),
  start: (name, parent, o) => (parent === ROOT_CONTEXT ? NOOP : off.start(name, parent, o)),
  span: async (name, parent, o, fn) => (parent === ROOT_CONTEXT ? fn(NOOP.span, ROOT_CONTEXT) : off.span(name, parent, o, fn)),
  outgoing: (ctx) => (ctx === ROOT_CONTEXT ? {} : off.outgoing(ctx)),
  shutdown: async () => undefined,
};

/**
 * Whether a call under `parent` has anything to trace: spans to record, or a caller's trace
 * context to pass on. When not, the hot path skips span work altogether (no option objects, no
 * wrapping closures, no extra awaits).
 */
export function traces(t: Tracing, parent: Context): boolean {
  return t !== NO_TRACING || parent !== ROOT_CONTEXT;
}

/** Tracing as the environment says (NO_TRACING when off); a problem with a variable is thrown as an Error naming it. */
export function startTracing(env: Record<string, string | undefined>, defaultService = "svc-proxy"): Tracing {
  const c = tracingConfig(env, defaultService);
  if (c === null) return NO_TRACING;
  if ("problem" in c) throw new Error(c.problem);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": c.serviceName, "service.version": VERSION }),
    sampler: samplerOf(c.sampler),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: c.url, headers: c.headers }), scheduledDelayMillis: 1000 })],
  });
  return tracingWith(provider.getTracer(defaultService, VERSION), async () => provider.shutdown());
}
