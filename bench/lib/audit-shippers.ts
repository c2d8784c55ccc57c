// Concurrent shippers (issue 30: "PostgreSQL ingest with 8 concurrent shippers: 0 errors"): each
// a runtime of its own with its own chain, sending 500-record batches back to back, as proxies
// draining their spools after an outage. An answer other than 200 is what a proxy would see:
// a 503 with Retry-After (store_busy) is waited out and the batch sent again, counted apart
// from errors; any other status is an error, counted by code (a 5xx batch is sent again, as a
// proxy does, up to 5 times; a 4xx is a mistake of the bench and stops it).
import type { Cp, Runtime } from "./audit-scale-cp.ts";
import { summarize } from "./stats.ts";

export type ShippersResult = {
  ms: number;
  records: number;
  batch: ReturnType<typeof summarize>;
  /** Non-200 answers other than 503 with Retry-After, by status and problem code. */
  errors: Map<string, number>;
  busy: number;
  rejected: number;
};

export async function concurrentShippers(cp: Cp, runtimes: Runtime[], batchesEach: number): Promise<ShippersResult> {
  const times: number[] = [];
  const errors = new Map<string, number>();
  let busy = 0;
  let rejected = 0;
  let records = 0;
  const send = async (rt: Runtime, body: string) => {
    for (let attempt = 0; ; attempt++) {
      const t0 = performance.now();
      const res = await fetch(`${cp.url}/api/v1/runtime/audit-records`, { method: "POST", headers: { authorization: `Bearer ${rt.token}`, "content-type": "application/json" }, body });
      const text = await res.text();
      times.push(performance.now() - t0);
      if (res.status === 200) {
        rejected += (JSON.parse(text) as { rejected: unknown[] }).rejected.length;
        return;
      }
      const retryAfter = res.headers.get("retry-after");
      if (res.status === 503 && retryAfter !== null) {
        busy++;
        await Bun.sleep(Number(retryAfter) * 1000);
        continue;
      }
      const code = `${res.status} ${/"code"\s*:\s*"([^"]+)"/.exec(text)?.[1] ?? "(no code)"}`;
      errors.set(code, (errors.get(code) ?? 0) + 1);
      if (res.status < 500) throw new Error(`a shipped batch answered ${res.status}: ${text.slice(0, 300)}`);
      if (attempt >= 5) return;
      await Bun.sleep(1000);
    }
  };
  const t0 = performance.now();
  await Promise.all(
    runtimes.map(async (rt) => {
      for (let b = 0; b < batchesEach; b++) {
        await send(rt, JSON.stringify({ records: Array.from({ length: 500 }, () => rt.record(Date.now())) }));
        records += 500;
      }
    }),
  );
  return { ms: performance.now() - t0, records, batch: summarize(times), errors, busy, rejected };
}
