// Issue 14's targets against peers (--peers), each installed by bench/setup-peers.sh from its
// registry (OPA through the Go module proxy, LiteLLM with pip, Cedar from npm):
//   - the same decision through OPA's REST API (an equivalent Rego policy, no audit), Cedar-wasm
//     served by Bun (no audit), a null server (the client's floor) and svc (its fdatasync'ed
//     audit record kept), all over a unix socket with the same Python client (keep-alive),
//     alternating within each run: p50/p99 at c=8, decisions/s at c=64, and server CPU per
//     decision (utime+stime of the server process over the c=8 run / decisions answered);
//     each run also measures the machine's fdatasync (bench/lib/fdatasync.ts), and issue 34's
//     limit is OPA's p50 plus that median: what a decision durable on this disk can at best cost;
//   - the same streamed model call through a LiteLLM proxy, a bare Bun relay (the hop's floor:
//     bench/load/bare-relay.ts) and svc, against the model double directly, alternating, with
//     5 ms pauses between calls: added time to first token.
// A peer that is not installed is a note in the table.
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { waitFor } from "../../test/support/controlplane-process.ts";
import type { BenchContext, Suite } from "../lib/context.ts";
import { measureFdatasync } from "../lib/fdatasync.ts";
import { cpuSeconds, type DecideLoad, decideLoad } from "../lib/procs.ts";
import { type Metric, metric } from "../lib/report.ts";
import { median } from "../lib/stats.ts";
import { startBareRelay } from "../lib/stack.ts";
import { CHAT, directInit, type Timing, timeStream } from "./model.ts";

// OPA 1.x (Rego v1): `if` and `contains` are keywords; a body with `;` needs braces.
const REGO = `package svc

default decide := {"decision": "deny"}

identity := data.identities[input.user.id]

subjects contains concat(":", ["user", identity.user_id])

subjects contains concat(":", ["group", g]) if some g in identity.groups

subjects contains "*"

permitted if {
	some s in subjects
	data.permits[input.tool][s]
}

denied if {
	some s in subjects
	data.denies[input.tool][s]
}

decide := {"decision": "permit"} if {
	permitted
	not denied
}
`;

const LITELLM_KEY = "sk-svc-bench";

/** The peers bench/setup-peers.sh installed (or found cached): name → executable. */
function installedPeers(say: (s: string) => void): Record<string, string> {
  say("  peers: bench/setup-peers.sh (cached after the first run)");
  const r = Bun.spawnSync(["bash", join(import.meta.dir, "../setup-peers.sh")], { stdout: "pipe", stderr: "inherit" });
  return Object.fromEntries(
    r.stdout
      .toString()
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split(" ", 2) as [string, string]),
  );
}

async function stop(p: Subprocess | null) {
  if (!p) return;
  p.kill("SIGTERM");
  await p.exited;
}

/** Starts a server and waits until it answers on its socket (any HTTP answer: it is listening). */
async function spawnOnSocket(cmd: string[], socket: string, health: string): Promise<Subprocess> {
  const proc = Bun.spawn(cmd, { stdout: "ignore", stderr: "ignore" });
  try {
    await waitFor(async () => (await fetch(`http://localhost${health}`, { unix: socket } as RequestInit)).status > 0, cmd.slice(0, 2).join(" "), 60_000);
  } catch (e) {
    await stop(proc); // never left running when it did not come up
    throw e;
  }
  return proc;
}

type Server = { name: string; socket: string; pid: number; urlPath: string; bodyStyle: "svc" | "opa"; token: string };
type Sample = { p50: number; p99: number; rps8: number; rps64: number; cpuUs: number };

async function sample(ctx: BenchContext, s: Server): Promise<Sample> {
  const scenario = ctx.stack.scenario;
  const common = [
    "--socket",
    s.socket,
    "--url-path",
    s.urlPath,
    "--body-style",
    s.bodyStyle,
    "--keepalive",
    "--duration",
    String(ctx.durationS),
    "--warmup",
    "0.5",
    "--tool",
    "crm.read",
    "--user",
    scenario.users.alice!.remote,
  ];
  const check = (r: DecideLoad) => {
    if (r.errors > 0 || r.answers.permit !== Object.values(r.answers).reduce((a, b) => a + b, 0)) throw new Error(`${s.name}: ${r.errors} errors, answers ${JSON.stringify(r.answers)}`);
    return r;
  };
  const cpu0 = cpuSeconds(s.pid);
  const c8 = check(await decideLoad([...common, "--concurrency", "8"], s.token));
  const cpu = cpuSeconds(s.pid) - cpu0;
  // CPU over the whole run (warm-up included) / decisions answered in the whole run.
  const answered = c8.rps * (ctx.durationS + 0.5);
  const c64 = check(await decideLoad([...common, "--concurrency", "64"], s.token));
  return { p50: c8.p50_ms, p99: c8.p99_ms, rps8: c8.rps, rps64: c64.rps, cpuUs: (cpu / answered) * 1e6 };
}

async function decisionPeers(ctx: BenchContext, installed: Record<string, string>): Promise<Metric[]> {
  const s = ctx.stack.scenario;
  const dir = mkdtempSync(join(ctx.stack.root, "peers-"));
  const alice = s.users.alice!;
  const bob = s.users.bob!;
  const data = {
    identities: { [alice.remote]: { user_id: alice.id, groups: ["sales-bench"] }, [bob.remote]: { user_id: bob.id, groups: [] } },
    permits: { "crm.read": { "group:sales-bench": true }, "crm.update": { "*": true } },
    denies: { "crm.update": { [`user:${bob.id}`]: true } },
  };
  const procs: Subprocess[] = [];
  const servers: Server[] = [{ name: "svc", socket: ctx.stack.proxy.socket, pid: ctx.stack.proxy.proc.pid, urlPath: "/v1/tools/decide", bodyStyle: "svc", token: ctx.stack.proxy.token }];
  const out: Metric[] = [];
  try {
    if (installed.opa) {
      writeFileSync(join(dir, "policy.rego"), REGO);
      writeFileSync(join(dir, "data.json"), JSON.stringify(data));
      const socket = join(dir, "opa.sock");
      const p = await spawnOnSocket([installed.opa, "run", "--server", "--log-level", "error", "--addr", `unix://${socket}`, join(dir, "policy.rego"), join(dir, "data.json")], socket, "/health");
      procs.push(p);
      servers.push({ name: "OPA", socket, pid: p.pid, urlPath: "/v1/data/svc/decide", bodyStyle: "opa", token: "" });
    } else out.push(metric("peers", "OPA REST decision", "", [Number.NaN], undefined, "skipped: bench/setup-peers.sh could not install OPA"));
    const toList = (t: Record<string, Record<string, boolean>>) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, Object.keys(v)]));
    const cedarSocket = join(dir, "cedar.sock");
    const cedar = await spawnOnSocket(
      ["bun", join(import.meta.dir, "../load/cedar-decide-server.ts"), cedarSocket, JSON.stringify({ ...data, permits: toList(data.permits), denies: toList(data.denies) })],
      cedarSocket,
      "/",
    );
    procs.push(cedar);
    servers.push({ name: "Cedar-wasm", socket: cedarSocket, pid: cedar.pid, urlPath: "/", bodyStyle: "svc", token: "" });
    const nullSocket = join(dir, "null.sock");
    const nul = await spawnOnSocket(["bun", join(import.meta.dir, "../load/null-decide-server.ts"), nullSocket], nullSocket, "/");
    procs.push(nul);
    servers.push({ name: "null server", socket: nullSocket, pid: nul.pid, urlPath: "/v1/tools/decide", bodyStyle: "svc", token: "" });

    const samples = new Map<string, Sample[]>(servers.map((x) => [x.name, []]));
    // Issue 34: the machine's fdatasync, measured in each run beside the decisions (the spool's own file system).
    const syncs: number[] = [];
    for (let r = 0; r < ctx.runs; r++) {
      syncs.push(measureFdatasync(ctx.stack.root).p50);
      for (const server of servers) samples.get(server.name)!.push(await sample(ctx, server));
      ctx.say(
        `  run ${r + 1}: ${servers
          .map((x) => {
            const v = samples.get(x.name)!.at(-1)!;
            return `${x.name} p50 ${v.p50.toFixed(2)} p99 ${v.p99.toFixed(2)} ms, ${Math.round(v.rps64)}/s at 64, ${v.cpuUs.toFixed(0)} µs CPU`;
          })
          .join("; ")}`,
      );
    }
    const of = (name: string, k: keyof Sample) => samples.get(name)!.map((x) => x[k]);
    for (const server of servers) {
      const note = server.name === "svc" ? "fdatasync'ed audit record, digest-only" : server.name === "null server" ? "answers at once: the client's floor" : "no audit";
      out.push(
        metric("peers", `${server.name} decide p50, c=8`, "ms", of(server.name, "p50"), undefined, note),
        metric("peers", `${server.name} decide p99, c=8`, "ms", of(server.name, "p99")),
        metric("peers", `${server.name} decisions/s, c=64`, "/s", of(server.name, "rps64")),
        metric(
          "peers",
          `${server.name} server CPU per decision`,
          "µs",
          of(server.name, "cpuUs"),
          server.name === "svc" ? { op: "<=", value: 60 } : undefined,
          "utime+stime of the server process at c=8",
        ),
      );
    }
    out.push(metric("peers", "fdatasync p50 (this machine, this run)", "ms", syncs, undefined, "1 KB written in place in a preallocated file, as the spool does"));
    if (installed.opa) {
      const ratio = (k: keyof Sample) => samples.get("svc")!.map((x, i) => x[k] / samples.get("OPA")![i]![k]);
      const limit = samples.get("OPA")!.map((x, i) => x.p50 + syncs[i]!);
      out.push(
        metric("peers", "limit: OPA decide p50 + fdatasync p50, c=8", "ms", limit, undefined, "issue 34: svc's p50 at c=8 is to be at most this"),
        metric(
          "peers",
          "svc decide p50 - limit, c=8",
          "ms",
          samples.get("svc")!.map((x, i) => x.p50 - limit[i]!),
          { op: "<=", value: 0 },
          "within each run",
        ),
        metric("peers", "svc / OPA decide p50, c=8", "x", ratio("p50"), { op: "<=", value: 1 }, "ratio within each run"),
        metric("peers", "svc / OPA decide p99, c=8", "x", ratio("p99"), { op: "<=", value: 1 }),
        metric("peers", "svc / OPA decisions/s, c=64", "x", ratio("rps64"), { op: ">=", value: 1.5 }),
      );
    }
    return out;
  } finally {
    for (const p of procs) await stop(p);
  }
}

async function litellmPeer(ctx: BenchContext, installed: Record<string, string>): Promise<Metric[]> {
  if (!installed.litellm) return [metric("peers", "LiteLLM streamed call", "", [Number.NaN], undefined, "skipped: bench/setup-peers.sh could not install LiteLLM")];
  const dir = mkdtempSync(join(ctx.stack.root, "litellm-"));
  const cfg = join(dir, "config.yaml");
  writeFileSync(cfg, `model_list:\n  - model_name: m-small\n    litellm_params:\n      model: openai/m-small\n      api_base: ${ctx.stack.model.endpoint}\n      api_key: none\n`);
  const port = (await import("../../test/support/controlplane-process.ts")).freePort();
  let proc: Subprocess | null = null;
  let relay: Awaited<ReturnType<typeof startBareRelay>> | null = null;
  try {
    proc = Bun.spawn([installed.litellm, "--config", cfg, "--host", "127.0.0.1", "--port", String(port)], {
      env: { ...process.env, LITELLM_MASTER_KEY: LITELLM_KEY, SSL_CERT_FILE: ctx.stack.model.caFile, SSL_VERIFY: "False", LITELLM_LOG: "ERROR" } as Record<string, string>,
      stdout: "ignore",
      stderr: "ignore",
    });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health/liveliness`)).ok, "litellm", 180_000);
    const px = ctx.stack.proxy;
    const litellm = {
      url: `http://127.0.0.1:${port}/v1/chat/completions`,
      init: { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${LITELLM_KEY}` }, body: JSON.stringify(CHAT) } as RequestInit,
    };
    const svc = {
      url: "http://localhost/v1/chat/completions",
      init: {
        method: "POST",
        unix: px.socket,
        headers: { authorization: `Bearer ${px.token}`, "content-type": "application/json", "x-svc-user-id": ctx.stack.scenario.users.alice!.remote },
        body: JSON.stringify(CHAT),
      } as RequestInit,
    };
    const direct = { url: `${ctx.stack.model.endpoint}/chat/completions`, init: directInit(ctx.stack.model.caFile) };
    // The hop's floor: a Bun relay that only forwards (issue 34's time to first token is read against it).
    relay = await startBareRelay(ctx.stack.model, dir);
    const bare = {
      url: "http://localhost/v1/chat/completions",
      init: { method: "POST", unix: relay.socket, headers: { "content-type": "application/json" }, body: JSON.stringify(CHAT) } as RequestInit,
    };
    const paths = { direct, litellm, bare, svc };
    const names = Object.keys(paths) as (keyof typeof paths)[];
    for (let i = 0; i < 10; i++) for (const k of names) await timeStream(paths[k].url, paths[k].init);
    const added = { litellm: [] as number[], bare: [] as number[], svc: [] as number[] };
    const n = ctx.quick ? 30 : 100;
    for (let r = 0; r < ctx.runs; r++) {
      const t = { direct: [] as Timing[], litellm: [] as Timing[], bare: [] as Timing[], svc: [] as Timing[] };
      for (let i = 0; i < n; i++) {
        for (const k of names) {
          t[k].push(await timeStream(paths[k].url, paths[k].init));
          await Bun.sleep(5);
        }
      }
      const ttft = (xs: Timing[]) => median(xs.map((x) => x.ttft));
      for (const k of ["litellm", "bare", "svc"] as const) added[k].push(ttft(t[k]) - ttft(t.direct));
      ctx.say(`  run ${r + 1}: added time to first token: LiteLLM ${added.litellm.at(-1)!.toFixed(3)} ms, bare Bun relay ${added.bare.at(-1)!.toFixed(3)} ms, svc ${added.svc.at(-1)!.toFixed(3)} ms`);
    }
    return [
      metric("peers", "LiteLLM added time to first token", "ms", added.litellm, undefined, "5 ms pauses between calls"),
      metric("peers", "bare Bun relay added time to first token", "ms", added.bare, undefined, "bench/load/bare-relay.ts: forwards only; the hop's floor"),
      metric("peers", "svc added time to first token", "ms", added.svc, { op: "<=", value: 0.5 }, "same run, 5 ms pauses; decision + fsynced record + forwarding"),
      metric(
        "peers",
        "svc added above the bare relay",
        "ms",
        added.svc.map((x, i) => x - added.bare[i]!),
        undefined,
        "decision, fsynced record, metering: svc's own share",
      ),
      metric(
        "peers",
        "svc / LiteLLM added time to first token",
        "x",
        added.svc.map((x, i) => x / added.litellm[i]!),
        { op: "<=", value: 0.1 },
        "ratio within each run",
      ),
    ];
  } finally {
    await relay?.stop();
    await stop(proc);
  }
}

export const peers: Suite = {
  name: "peers",
  async run(ctx) {
    const installed = installedPeers(ctx.say);
    return [...(await decisionPeers(ctx, installed)), ...(await litellmPeer(ctx, installed))];
  },
};
