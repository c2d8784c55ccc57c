// A real OpenTelemetry Collector for the tracing tests (issue 35): a minimal distribution of its core components, built from the
// Go module proxy and cached by scripts/otelcol.sh, receiving OTLP over HTTP (JSON or protobuf)
// and gRPC on loopback ports of its own, and exporting what it received by its OTLP/HTTP
// exporter (JSON) to a sink in this process, where a test reads the spans by trace. Whatever
// each service sends (svc's JSON, the Python SDK's protobuf, gRPC from Open WebUI) is decoded by
// the Collector itself: a span reaches the sink only if the Collector took it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./controlplane-process.ts";

export type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  service: string;
  attributes: Record<string, unknown>;
};

export type Collector = {
  /** OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`; traces at /v1/traces). */
  httpEndpoint: string;
  /** OTLP/gRPC address, `http://127.0.0.1:port`. */
  grpcEndpoint: string;
  spans(): OtlpSpan[];
  /** Waits until pred holds of the spans received so far (the Collector batches every 200 ms). */
  waitFor(pred: (spans: OtlpSpan[]) => boolean, what: string, timeoutMs?: number): Promise<OtlpSpan[]>;
  stop(): Promise<void>;
};

let bin: string | null = null;

/** The Collector's binary (built once by scripts/otelcol.sh). */
export function otelcolBin(): string {
  if (bin) return bin;
  const r = Bun.spawnSync(["bash", join(import.meta.dir, "../../scripts/otelcol.sh")], { stdout: "pipe", stderr: "inherit" });
  if (r.exitCode !== 0) throw new Error("scripts/otelcol.sh failed");
  bin = r.stdout.toString().trim().split("\n").at(-1)!;
  return bin;
}

const value = (v: Record<string, unknown>): unknown => Object.values(v)[0];

function spansOf(body: any): OtlpSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs: any) => {
    const service = String(value(rs.resource?.attributes?.find((a: any) => a.key === "service.name")?.value ?? {}) ?? "");
    return (rs.scopeSpans ?? []).flatMap((ss: any) =>
      (ss.spans ?? []).map((s: any) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
        name: s.name,
        kind: s.kind,
        service,
        attributes: Object.fromEntries((s.attributes ?? []).map((a: any) => [a.key, value(a.value)])),
      })),
    );
  });
}

export async function startCollector(): Promise<Collector> {
  const received: OtlpSpan[] = [];
  const sink = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      if (new URL(req.url).pathname === "/v1/traces") received.push(...spansOf(await req.json()));
      return Response.json({});
    },
  });
  const [http, grpc] = [freePort(), freePort()];
  const dir = mkdtempSync(join(tmpdir(), "svc-otelcol-"));
  const config = join(dir, "config.yaml");
  writeFileSync(
    config,
    `receivers:
  otlp:
    protocols:
      http: { endpoint: "127.0.0.1:${http}" }
      grpc: { endpoint: "127.0.0.1:${grpc}" }
processors:
  batch: { timeout: 200ms }
exporters:
  otlp_http:
    endpoint: "http://127.0.0.1:${sink.port}"
    encoding: json
    compression: none
service:
  telemetry:
    metrics: { level: none }
    logs: { level: warn }
  pipelines:
    traces: { receivers: [otlp], processors: [batch], exporters: [otlp_http] }
`,
  );
  const proc = Bun.spawn([otelcolBin(), "--config", `file:${config}`], { stdout: "ignore", stderr: "inherit" });
  const httpEndpoint = `http://127.0.0.1:${http}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`the Collector exited with ${proc.exitCode}`);
    const up = await fetch(`${httpEndpoint}/v1/traces`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error("the Collector did not answer within 30 s");
    await Bun.sleep(100);
  }
  return {
    httpEndpoint,
    grpcEndpoint: `http://127.0.0.1:${grpc}`,
    spans: () => [...received],
    async waitFor(pred, what, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      while (!pred(received)) {
        if (Date.now() > end) throw new Error(`the Collector did not pass on ${what}; it has: ${received.map((s) => `${s.service}:${s.name}`).join(", ")}`);
        await Bun.sleep(100);
      }
      return [...received];
    },
    async stop() {
      proc.kill();
      await proc.exited;
      await sink.stop(true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
