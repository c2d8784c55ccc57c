// Issue 14, bounded memory: the proxy's RSS with 1,000,000 unshipped audit records (100,000
// with --quick) during a control-plane outage. A first proxy bootstraps and persists its
// bundle; the spool is then filled with the installation's digest-only records (what a long
// outage leaves, 4 MiB segments as the proxy writes them); the proxy is restarted against an
// unreachable control plane (stale, deciding on the persisted bundle) and measured: start →
// ready (the backlog is read after that), start → backlog indexed (the streamed reload), RSS
// idle, and RSS peak while deciding at c=64 (each decision adds a record). Target: RSS ≤ 150 MB.
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { newId } from "../../src/contract/ids.ts";
import { segName } from "../../src/proxy/audit/spool-files.ts";
import { DEFAULT_SEGMENT_MAX_BYTES } from "../../src/proxy/audit/spool.ts";
import type { BenchContext, Suite } from "../lib/context.ts";
import { decideLoad, rssMb, rssPeak } from "../lib/procs.ts";
import { type Metric, metric } from "../lib/report.ts";
import { startBenchProxy } from "../lib/stack.ts";

const RSS_TARGET_MB = 150;
/** Nothing listens here: the outage. */
const UNREACHABLE_CP = "http://127.0.0.1:9";

/** Write `count` records of the installation as the proxy's segment files; returns bytes written. */
async function fillSpool(spool: string, count: number, owner: { orgId: string; workspaceId: string; installationId: string; agentId: string; userId: string; remote: string }): Promise<number> {
  mkdirSync(spool, { recursive: true, mode: 0o700 });
  for (const n of readdirSync(spool)) if (n.startsWith("seg-")) rmSync(join(spool, n));
  const start = Date.now() - 3_600_000; // an hour-long outage: within the control plane's window
  let seq = 1;
  let bytes = 0;
  let chunk: string[] = [];
  let chunkBytes = 0;
  const flush = async () => {
    await Bun.write(join(spool, segName(seq++, "jsonl")), chunk.join(""));
    bytes += chunkBytes;
    chunk = [];
    chunkBytes = 0;
  };
  for (let i = 0; i < count; i++) {
    const ts = start + Math.floor((i * 3_600_000) / count);
    const line = `${JSON.stringify({
      id: newId("auditRecord", ts),
      ts: new Date(ts).toISOString(),
      kind: "tool",
      harness: "chatui",
      organization_id: owner.orgId,
      workspace_id: owner.workspaceId,
      installation_id: owner.installationId,
      agent_id: owner.agentId,
      replica_id: "rep_01BENCHSPOOLREPLICA000000",
      action: "tool:crm.read",
      tool_name: "crm.read",
      decision: "permit",
      reason: "policy",
      policy_id: "pol_01BENCHSPOOLPOLICY0000000",
      policy_revision: 3,
      subject: { user_id: owner.userId, remote_user_id: owner.remote, via_installation: false },
      args_digest: `hmac-sha256:${(i.toString(16) + "0".repeat(64)).slice(0, 64)}`,
      digest_key_id: "dk_01BENCHSPOOLDIGESTKEY00000",
      recipient_key_ids: [],
      ciphertext: null,
    })}\n`;
    chunk.push(line);
    chunkBytes += line.length;
    if (chunkBytes >= DEFAULT_SEGMENT_MAX_BYTES) await flush();
  }
  if (chunk.length > 0) await flush();
  return bytes;
}

export const spool: Suite = {
  name: "spool",
  async run(ctx: BenchContext): Promise<Metric[]> {
    const { stack } = ctx;
    const records = ctx.quick ? 100_000 : 1_000_000;
    const dir = join(stack.root, "spool-bench");
    const env = { SVC_PROXY_STATE_DIR: join(dir, "state"), SVC_PROXY_AUDIT: join(dir, "spool"), SVC_PROXY_POLL_INTERVAL: "1h" };
    const base = { token: stack.scenario.runtimeToken, caFile: stack.model.caFile, root: stack.root, env };
    // Bootstrap once so the restarted proxy can decide on its persisted bundle during the outage.
    await (await startBenchProxy({ ...base, cpUrl: stack.cp.url })).stop();
    const alice = stack.scenario.users.alice!;
    const t0 = performance.now();
    const bytes = await fillSpool(env.SVC_PROXY_AUDIT, records, {
      orgId: stack.cp.orgId,
      workspaceId: stack.scenario.workspace,
      installationId: stack.scenario.installationId,
      agentId: stack.scenario.agentId,
      userId: alice.id,
      remote: alice.remote,
    });
    ctx.say(`  wrote ${records.toLocaleString("en-US")} records (${(bytes / 1e6).toFixed(0)} MB) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    ctx.facts.spool_records = records;
    ctx.facts.spool_bytes = bytes;

    const start: number[] = [];
    const indexed: number[] = [];
    const idle: number[] = [];
    const loaded: number[] = [];
    const depth: number[] = [];
    try {
      for (let i = 0; i < ctx.runs; i++) {
        const t = performance.now();
        const px = await startBenchProxy({ ...base, cpUrl: UNREACHABLE_CP });
        try {
          start.push(px.startMs);
          let d = 0;
          while ((d = (await px.policy()).spool_depth) < records) await Bun.sleep(20);
          indexed.push(performance.now() - t);
          depth.push(d);
          await Bun.sleep(2000);
          idle.push(rssMb(px.proc.pid));
          const peak = rssPeak(px.proc.pid);
          await decideLoad(["--socket", px.socket, "--concurrency", "64", "--duration", String(Math.min(ctx.durationS, 3)), "--warmup", "0.3", "--tool", "crm.read", "--user", alice.remote], px.token);
          loaded.push(peak.stop());
        } finally {
          await px.stop(); // its own directory (socket, log); the spool stays for the next run
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const n = `${(records / 1e6).toLocaleString("en-US")}M`;
    ctx.say(
      `  unshipped ${depth.join("/")}; start→ready ${start.map((x) => x.toFixed(0)).join("/")} ms, backlog indexed ${indexed.map((x) => x.toFixed(0)).join("/")} ms; RSS idle ${idle.map((x) => x.toFixed(0)).join("/")} MB, deciding ${loaded.map((x) => x.toFixed(0)).join("/")} MB`,
    );
    return [
      metric("spool", `start → ready with ${n} unshipped records`, "ms", start, undefined, "the backlog is indexed after readiness"),
      metric("spool", `start → ${n} unshipped records indexed (streamed reload)`, "ms", indexed, undefined, `${(bytes / 1e6).toFixed(0)} MB of segments; control plane unreachable`),
      metric("spool", `proxy RSS idle, ${n} unshipped records`, "MB", idle, { op: "<=", value: RSS_TARGET_MB }),
      metric("spool", `proxy RSS peak deciding (c=64), ${n} unshipped records`, "MB", loaded, { op: "<=", value: RSS_TARGET_MB }),
    ];
  },
};
