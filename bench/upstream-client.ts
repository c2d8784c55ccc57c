// Issue 34's lead for time to first token: "an HTTP client on the event loop instead of fetch's
// thread hand-offs, or a measured reason why not". The proxy forwards a model call with Bun's
// fetch, which runs on Bun's HTTP thread (a hand-off each way). This measures what a client on
// the event loop would save: the time to the first body byte of the same streamed chat
// completion from the model double (TLS, kept-alive connection) through fetch, and through
// the least an event-loop client can do (node:tls, one kept-alive socket, the request written
// by hand, the answer's head and first chunk noticed, no parsing beyond that), alternating call
// by call with 5 ms pauses as the peers suite does. The second is a floor, not a client: it has
// no pool, no proxy support, no chunked decoding, no redirects, no timeouts.
//   bun bench/upstream-client.ts [--calls N] [--runs N]
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, type TLSSocket } from "node:tls";
import { type Metric, metric, table } from "./lib/report.ts";
import { startModelServerProcess } from "./lib/stack.ts";
import { median } from "./lib/stats.ts";
import { CHAT, directInit } from "./suites/model.ts";

const argv = process.argv.slice(2);
const flag = (name: string, dflt: number) => Number(argv[argv.indexOf(name) + 1] ?? 0) || dflt;
const CALLS = flag("--calls", 300);
const RUNS = flag("--runs", 3);
const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

const model = await startModelServerProcess();
const url = new URL(`${model.endpoint}/chat/completions`);
const init = directInit(model.caFile);
const body = JSON.stringify(CHAT);

async function viaFetch(): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url, init);
  const reader = res.body!.getReader();
  let first = Number.NaN;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (Number.isNaN(first) && value.length > 0) first = performance.now() - t0;
  }
  return first;
}

let onData: ((b: Buffer) => void) | null = null;
const sock = await new Promise<TLSSocket>((resolve, reject) => {
  const s = connect({ host: url.hostname, port: Number(url.port), ca: readFileSync(model.caFile, "utf8") }, () => resolve(s));
  s.on("error", reject);
  s.on("data", (b: Buffer) => onData?.(b));
});
const request = `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\naccept: text/event-stream\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

/** One call on the kept-alive socket: ms to the first body byte; resolves at the last chunk. */
async function viaEventLoop(): Promise<number> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let first = Number.NaN;
    let seen = "";
    onData = (b) => {
      seen += b.toString("latin1");
      const head = seen.indexOf("\r\n\r\n");
      if (Number.isNaN(first) && head >= 0 && seen.length > head + 4) first = performance.now() - t0;
      if (seen.endsWith("\r\n0\r\n\r\n")) {
        onData = null;
        resolve(first);
      }
    };
    sock.write(request);
  });
}

const loadBefore = loadavg();
for (let i = 0; i < 30; i++) {
  await viaFetch();
  await viaEventLoop();
}
const runs = { fetch: [] as number[], loop: [] as number[] };
for (let r = 0; r < RUNS; r++) {
  const f: number[] = [];
  const l: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    f.push(await viaFetch());
    await Bun.sleep(5);
    l.push(await viaEventLoop());
    await Bun.sleep(5);
  }
  runs.fetch.push(median(f));
  runs.loop.push(median(l));
}
sock.destroy();
await model.stop();

const metrics: Metric[] = [
  metric("upstream client", "first body byte, Bun fetch", "ms", runs.fetch, undefined, "what the proxy uses"),
  metric("upstream client", "first body byte, node:tls on the event loop", "ms", runs.loop, undefined, "a floor: no pool, proxy, decoding or timeouts"),
  metric(
    "upstream client",
    "saved by a client on the event loop",
    "ms",
    runs.fetch.map((x, i) => x - runs.loop[i]!),
  ),
  metric(
    "upstream client",
    "event loop / fetch",
    "x",
    runs.loop.map((x, i) => x / runs.fetch[i]!),
  ),
];
console.log(`${CALLS} calls × ${RUNS} runs, alternating; load average ${loadBefore} before, ${loadavg()} after\n`);
console.log(table(metrics));
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
const out = join(import.meta.dir, "results", `upstream-client-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(out, JSON.stringify({ calls: CALLS, runs: RUNS, load: { before: loadBefore, after: loadavg() }, metrics }, null, 2));
console.log(`written ${out}`);
process.exit(0);
