// Issue 9 §3: a streamed chat completion directly to the model server double vs through the
// proxy (decision, durable audit record, forwarding, SSE relay), same client (Bun fetch in
// the runner), same request, alternating, one at a time. Time to first token = the first body
// chunk (the model's first SSE event); total = the last byte. Optional peer: LiteLLM.
import { readFileSync } from "node:fs";
import type { BenchContext, Suite } from "../lib/context.ts";
import { type Metric, metric } from "../lib/report.ts";
import { median } from "../lib/stats.ts";

export type Timing = { ttft: number; total: number };

export const CHAT = { model: "m-small", stream: true, messages: [{ role: "user", content: "How did the quarter go?" }] };

export async function timeStream(url: string, init: RequestInit): Promise<Timing> {
  const t0 = performance.now();
  const res = await fetch(url, init);
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
  const reader = res.body!.getReader();
  let ttft = Number.NaN;
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (Number.isNaN(ttft) && value.length > 0) ttft = performance.now() - t0;
    bytes += value.length;
  }
  if (bytes < 100) throw new Error(`${url}: short stream (${bytes} bytes)`);
  return { ttft, total: performance.now() - t0 };
}

export function directInit(caFile: string): RequestInit {
  return { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify(CHAT), tls: { ca: [readFileSync(caFile, "utf8")] } } as RequestInit;
}

export const model: Suite = {
  name: "model",
  async run(ctx: BenchContext): Promise<Metric[]> {
    const { stack } = ctx;
    const px = stack.proxy;
    const n = ctx.quick ? 60 : 200;
    const direct = directInit(stack.model.caFile);
    const directUrl = `${stack.model.endpoint}/chat/completions`;
    const viaInit = {
      method: "POST",
      unix: px.socket,
      headers: { authorization: `Bearer ${px.token}`, "content-type": "application/json", "x-svc-user-id": stack.scenario.users.alice!.remote },
      body: JSON.stringify(CHAT),
    } as RequestInit;
    const runs = { dTtft: [] as number[], pTtft: [] as number[], dTotal: [] as number[], pTotal: [] as number[], addTtft: [] as number[], addTotal: [] as number[] };
    for (let i = 0; i < 20; i++) {
      await timeStream(directUrl, direct);
      await timeStream("http://localhost/v1/chat/completions", viaInit);
    }
    for (let r = 0; r < ctx.runs; r++) {
      const d: Timing[] = [];
      const p: Timing[] = [];
      for (let i = 0; i < n; i++) {
        d.push(await timeStream(directUrl, direct));
        p.push(await timeStream("http://localhost/v1/chat/completions", viaInit));
      }
      const m = (xs: Timing[], k: keyof Timing) => median(xs.map((x) => x[k]));
      runs.dTtft.push(m(d, "ttft"));
      runs.pTtft.push(m(p, "ttft"));
      runs.dTotal.push(m(d, "total"));
      runs.pTotal.push(m(p, "total"));
      runs.addTtft.push(m(p, "ttft") - m(d, "ttft"));
      runs.addTotal.push(m(p, "total") - m(d, "total"));
      ctx.say(`  run ${r + 1}: ttft direct ${m(d, "ttft").toFixed(3)} ms, via proxy ${m(p, "ttft").toFixed(3)} ms; total ${m(d, "total").toFixed(3)} / ${m(p, "total").toFixed(3)} ms`);
    }
    return [
      metric("model call", "time to first token, direct", "ms", runs.dTtft),
      metric("model call", "time to first token, via proxy", "ms", runs.pTtft),
      metric("model call", "added time to first token (median)", "ms", runs.addTtft, { op: "<=", value: 1 }),
      metric("model call", "total, direct", "ms", runs.dTotal),
      metric("model call", "total, via proxy", "ms", runs.pTotal),
      metric("model call", "added total time (median)", "ms", runs.addTotal),
    ];
  },
};
