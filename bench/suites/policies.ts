// Issue 9 §2: decision time against 10, 1,000 and 100,000 policies bound to the agent. The
// policies are written straight into the control plane's SQLite file (the admin API would
// take minutes for 100,000), the organization's revision is bumped, and the proxy picks the
// bundle up on its next poll. Measured: the decision over the socket (Python, concurrency 1,
// as the governor makes it) and the pure index lookup in process (src/proxy/policy/policy-index.ts).
// A seventh of the policies carry a CEL condition (issue 17), so the bundle is the one the
// proxy gets (`conditions=1`) and conditions compile once per bundle.
import { eq, like, sql } from "drizzle-orm";
import { newId } from "../../src/contract/ids.ts";
import type { PolicyBundle } from "../../src/contract/bundle.ts";
import { openStore, tables } from "../../src/controlplane/db/index.ts";
import { indexBundle, decideTool } from "../../src/proxy/policy/policy-index.ts";
import type { BenchContext, Suite } from "../lib/context.ts";
import { decideLoad } from "../lib/procs.ts";
import { type Metric, metric } from "../lib/report.ts";

const COUNTS = [10, 1_000, 100_000] as const;
const NAME_PREFIX = "bench-scale ";

export async function writePolicies(ctx: BenchContext, count: number): Promise<void> {
  const { stack } = ctx;
  const store = openStore(stack.cp.database);
  await store.db.transaction(async (tx) => {
    const { policies: p, organizations: o } = tables(tx);
    await tx.delete(p).where(like(p.name, `${NAME_PREFIX}%`));
    const now = Date.now();
    for (let k = 0; k < count; k += 1000) {
      const rows = [];
      for (let i = k; i < Math.min(count, k + 1000); i++) {
        // A third on the tool being decided (other subjects), the rest spread over 100 other tools.
        const dst = i % 3 === 0 ? "tool:crm.read" : `tool:bench.tool${i % 100}`;
        const src = i % 2 === 0 ? `user:usr_BENCH${String(i).padStart(21, "0")}` : `group:bench-g${i}`;
        // Every seventh carries a CEL condition (issue 17): compiled once per bundle, evaluated only for its own subjects.
        const condition = i % 7 === 0 ? `args.amount <= ${i}` : null;
        rows.push({
          id: newId("policy"),
          orgId: stack.cp.orgId,
          workspaceId: stack.scenario.workspace,
          agentId: stack.scenario.agentId,
          name: `${NAME_PREFIX}${i}`,
          src,
          dst,
          effect: i % 10 === 9 ? ("deny" as const) : ("permit" as const),
          condition,
          createdAt: now,
        });
      }
      await tx.insert(p).values(rows);
    }
    await tx
      .update(o)
      .set({ revision: sql`${o.revision} + 1` })
      .where(eq(o.id, stack.cp.orgId));
  });
  await store.close();
}

async function fetchBundle(ctx: BenchContext): Promise<{ bundle: PolicyBundle; bytes: number; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${ctx.stack.cp.url}/api/v1/runtime/policy-bundle?version=1&conditions=1`, { headers: { authorization: `Bearer ${ctx.stack.scenario.runtimeToken}` } });
  const text = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`policy bundle: ${res.status} ${text.slice(0, 300)}`);
  return { bundle: JSON.parse(text) as PolicyBundle, bytes: text.length, ms };
}

/** ns per decision of the compiled index, alice (group permit) on crm.read. */
function inProcessNs(bundle: PolicyBundle, remoteUser: string): number {
  const c = indexBundle(bundle);
  const user = { id: remoteUser };
  const call = { args: { amount: 100 }, now: new Date() };
  for (let i = 0; i < 20_000; i++) decideTool(c, user, "crm.read", call);
  const n = 200_000;
  const t0 = Bun.nanoseconds();
  let permits = 0;
  for (let i = 0; i < n; i++) if (decideTool(c, user, "crm.read", call).decision === "permit") permits++;
  const ns = (Bun.nanoseconds() - t0) / n;
  if (permits !== n) throw new Error("the scale policies changed alice's decision");
  return ns;
}

export const policies: Suite = {
  name: "policies",
  async run(ctx) {
    const { stack } = ctx;
    const px = stack.proxy;
    const alice = stack.scenario.users.alice!.remote;
    const out: Metric[] = [];
    const facts: Record<string, unknown> = {};
    for (const count of COUNTS) {
      const rev = (await px.policy()).policy_revision;
      const t0 = performance.now();
      await writePolicies(ctx, count);
      await stack.waitProxyRevision(rev);
      const reloadMs = performance.now() - t0;
      const b = await fetchBundle(ctx);
      const p50: number[] = [];
      const p99: number[] = [];
      const ns: number[] = [];
      for (let i = 0; i < ctx.runs; i++) {
        const r = await decideLoad(["--socket", px.socket, "--concurrency", "1", "--duration", String(Math.min(ctx.durationS, 2)), "--warmup", "0.3", "--tool", "crm.read", "--user", alice], px.token);
        if (r.errors > 0 || r.answers.permit !== r.count) throw new Error(`decide at ${count} policies: ${r.errors} errors, answers ${JSON.stringify(r.answers)}`);
        p50.push(r.p50_ms);
        p99.push(r.p99_ms);
        ns.push(inProcessNs(b.bundle, alice));
      }
      const label = `${count.toLocaleString("en-US")} policies`;
      ctx.say(`  ${label}: p50 ${p50.map((x) => x.toFixed(3)).join("/")} ms, index ${ns.map((x) => x.toFixed(0)).join("/")} ns, bundle ${(b.bytes / 1e6).toFixed(2)} MB`);
      out.push(metric("policy scaling", `decide p50, ${label}`, "ms", p50));
      out.push(metric("policy scaling", `decide p99, ${label}`, "ms", p99));
      out.push(metric("policy scaling", `index lookup, ${label}`, "ns", ns));
      facts[String(count)] = { bundle_bytes: b.bytes, bundle_get_ms: b.ms, write_to_proxy_reload_ms: reloadMs, policies_in_bundle: b.bundle.policies.length };
    }
    // Back to the scenario's own policies for the suites that follow.
    const rev = (await px.policy()).policy_revision;
    await writePolicies(ctx, 0);
    await stack.waitProxyRevision(rev);
    ctx.facts.policy_scaling = facts;
    const first = out.find((m) => m.name.startsWith("decide p50, 10 "))!.median;
    const last = out.find((m) => m.name.startsWith("decide p50, 100,000"))!.median;
    out.push(metric("policy scaling", "decide p50 ratio 100,000 / 10 policies", "x", [last / first], { op: "<=", value: 1.2 }, "flat = within 20 %"));
    return out;
  },
};
