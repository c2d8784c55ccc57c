// The decision route's own CPU, two source trees side by side (issue 28: the governed-call
// pipeline must cost no more than the hand-built routes it replaced). In this process, no I/O:
// each tree's local API (its router and `POST /v1/tools/decide`) over a compiled bundle, with a
// recorder that answers at once, so what is measured is the route's code path alone (body
// read and checked, decided, answered), CPU µs per decision. The spool's fdatasync, sealing
// and the socket, which dominate a real decision, are `bench/proxy-ab.ts`'s.
//   bun bench/route-ab.ts --tree old=/path/to/old/checkout --tree new=. [--rounds 5] [--calls 30000]
// Each round runs every tree once, in a child process of its own (a fresh JIT), alternating.
// The old tree needs its own node_modules (a copy, or `bun install` there).
import { join, resolve } from "node:path";

type Opts = { trees: [string, string][]; rounds: number; calls: number };

if (process.argv[2] === "--child") {
  await child(resolve(process.argv[3]!), Number(process.argv[4]));
  process.exit(0);
}

function parse(argv: string[]): Opts {
  const o: Opts = { trees: [], rounds: 5, calls: 30_000 };
  for (let i = 0; i < argv.length; i += 2) {
    const [a, v = ""] = [argv[i]!, argv[i + 1]];
    if (a === "--tree") o.trees.push([v.slice(0, v.indexOf("=")), v.slice(v.indexOf("=") + 1)]);
    else if (a === "--rounds") o.rounds = Number(v);
    else if (a === "--calls") o.calls = Number(v);
    else throw new Error(`unknown argument ${a}`);
  }
  if (o.trees.length === 0) throw new Error("name at least one --tree name=path");
  return o;
}

/** One tree's route: a warm-up, then `calls` decisions; prints the CPU µs per decision. */
async function child(root: string, calls: number): Promise<void> {
  const src = (p: string) => join(root, "src/proxy", p);
  const { fakeBundle, bundleTool, bundleIdentity } = await import(src("testing/bundle.ts"));
  const { indexBundle } = await import(src("policy/policy-index.ts"));
  const { ProxyStatus } = await import(src("policy/status.ts"));
  const { createLocalApi } = await import(src("api/local-api.ts"));
  const bundle = fakeBundle({
    tools: [bundleTool("crm.read")],
    policies: [{ id: "pol_1", name: "p", src: "group:sales", dst: "tool:crm.read", effect: "permit" }],
    identities: [bundleIdentity("alice", ["sales"])],
  });
  const status = new ProxyStatus();
  Object.assign(status, { compiled: indexBundle(bundle), serving: () => true });
  let n = 0;
  const recorder = { decision: async () => ({ id: `rec_${++n}` }), outcome: async () => null, modelOutcome: async () => ({}) };
  const log = { info() {}, warn() {}, error() {} };
  const common = { token: "t", status, credentials: { unseal: async () => "" }, modelCa: null, spoolDepth: () => 0, log };
  let deps: Record<string, unknown>;
  try {
    // This tree has the pipeline (issue 28): the routes are adapters over it.
    const { Pipeline } = await import(src("pipeline/pipeline.ts"));
    const { DecisionSummary } = await import(src("pipeline/decision-summary.ts"));
    deps = { ...common, pipeline: new Pipeline({ status, recorder, claims: { forRefusal: async () => undefined }, decisions: new DecisionSummary({ log }), log, now: () => new Date() }) };
  } catch {
    deps = { ...common, recorder, claims: { createClaim: async () => ({}) } }; // the hand-built routes
  }
  const api = createLocalApi(deps) as (r: Request) => Promise<Response>;
  const body = JSON.stringify({ tool: "crm.read", user: { id: "fe-alice" }, args: { q: "hello", n: 3 } });
  const call = async () => {
    const r = await api(new Request("http://localhost/v1/tools/decide", { method: "POST", headers: { authorization: "Bearer t", "content-type": "application/json" }, body }));
    if ((await r.json()).decision !== "permit") throw new Error("not a permit");
  };
  for (let i = 0; i < 20_000; i++) await call();
  const t0 = process.cpuUsage();
  for (let i = 0; i < calls; i++) await call();
  const t = process.cpuUsage(t0);
  console.log(((t.user + t.system) / calls).toFixed(3));
}

const o = parse(process.argv.slice(2));
const load = () => (require("node:fs") as typeof import("node:fs")).readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
console.error(`load average before: ${load()}`);
const us = new Map<string, number[]>(o.trees.map(([n]) => [n, []]));
for (let r = 0; r < o.rounds; r++) {
  for (const [name, path] of o.trees) {
    const p = Bun.spawnSync(["bun", import.meta.path, "--child", path, String(o.calls)], { stdout: "pipe", stderr: "inherit" });
    if (p.exitCode !== 0) throw new Error(`${name}: the child failed`);
    us.get(name)!.push(Number(p.stdout.toString().trim()));
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [name, xs] of us) console.log(`${name}: ${median(xs).toFixed(2)} µs CPU per decision (median of ${xs.length}: ${xs.map((x) => x.toFixed(2)).join(" ")})`);
const [first] = o.trees;
for (const [name] of o.trees.slice(1)) console.log(`${name} / ${first![0]}: ${(median(us.get(name)!) / median(us.get(first![0])!)).toFixed(3)}x`);
console.log(`load average after: ${load()}`);
