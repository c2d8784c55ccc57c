// A closed-loop HTTP load generator in its own process (Bun fetch, keep-alive): `concurrency`
// workers each send a request, wait for the whole answer, repeat, for `warmupS + durationS`.
// Modes: "static" sends the same request; "audit-batch" posts fresh audit records in batches
// of `batch` (the proxy shipper's call). Reads one JSON spec from argv[2], prints one JSON line.
import { newId } from "../../src/contract/ids.ts";
import { summarize } from "../lib/stats.ts";

export type LoadSpec = {
  url: string;
  unix?: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  mode: "static" | "audit-batch";
  /** audit-batch: the record fields other than id and ts */
  template?: Record<string, unknown>;
  batch?: number;
  expectStatus: number;
  concurrency: number;
  durationS: number;
  warmupS: number;
};

/** clientCpuS: this load process's own CPU (user + system), warm-up included: on a 2-core machine the client competes with the server. */
export type LoadResult = { count: number; errors: number; firstError: string | null; rps: number; items: number; itemsPerS: number; p50_ms: number; p99_ms: number; clientCpuS: number };

const spec = JSON.parse(process.argv[2]!) as LoadSpec;
const lat: number[] = [];
let count = 0;
let items = 0;
let errors = 0;
let firstError: string | null = null;
const start = performance.now();
const warmEnd = start + spec.warmupS * 1000;
const end = warmEnd + spec.durationS * 1000;

function body(): { text: string | undefined; n: number } {
  if (spec.mode === "static") return { text: spec.body, n: 1 };
  const n = spec.batch ?? 500;
  const ts = new Date().toISOString();
  const records = Array.from({ length: n }, () => ({ ...spec.template, id: newId("auditRecord"), ts }));
  return { text: JSON.stringify({ records }), n };
}

async function worker(): Promise<void> {
  while (performance.now() < end) {
    const b = body();
    const t0 = performance.now();
    try {
      const res = await fetch(spec.url, { method: spec.method, headers: spec.headers, body: b.text, ...(spec.unix ? { unix: spec.unix } : {}) } as RequestInit);
      await res.arrayBuffer();
      const t1 = performance.now();
      if (res.status !== spec.expectStatus) {
        errors++;
        firstError ??= `HTTP ${res.status}`;
        continue;
      }
      if (t0 >= warmEnd) {
        lat.push(t1 - t0);
        count++;
        items += b.n;
      }
    } catch (e) {
      errors++;
      firstError ??= (e as Error).message;
    }
  }
}

await Promise.all(Array.from({ length: spec.concurrency }, worker));
const s = summarize(lat);
const cpu = process.cpuUsage();
const result: LoadResult = {
  count,
  errors,
  firstError,
  rps: count / spec.durationS,
  items,
  itemsPerS: items / spec.durationS,
  p50_ms: s.p50,
  p99_ms: s.p99,
  clientCpuS: (cpu.user + cpu.system) / 1e6,
};
console.log(JSON.stringify(result));
