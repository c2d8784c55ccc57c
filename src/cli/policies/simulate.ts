// `svc policies simulate --since 7d [-f proposed.yaml] [--identity file]`: replays recorded tool
// decisions against the current policies, or a proposed file, with the proxy's own decision
// code (policy-index.ts, through whatIf) at each record's own time, and prints what would
// change. Arguments exist only as age ciphertext: a record whose arguments cannot be decrypted
// here (digest-only, or no --identity, or not one of its recipients) is judged only when no
// condition of its action reads `args`; otherwise it is listed as not judged, with why.
import { readFileSync } from "node:fs";
import type { BundlePolicy, PolicyBundle } from "../../contract/bundle.ts";
import { parseExactJson } from "../../contract/exact-json.ts";
import { CommandFailure, UsageError, command } from "../../command/index.ts";
import { decryptAgeFile, parseIdentityFile } from "../audit/identity.ts";
import { type OrgClient, connect, seg } from "../shared/client.ts";
import { expandHome, readCliEnv } from "../shared/config.ts";
import { findWorkspace } from "../shared/scope.ts";
import { jsonFlag, note, out, printJson, renderTable } from "../shared/output.ts";
import { type PolicyFile, parsePolicyFile } from "./code.ts";
import { fetchBundle, whatIf } from "./whatif.ts";

/** A tool decision as the audit search returns it (the fields a replay needs). */
export type RecordedDecision = {
  id: string;
  ts: string;
  kind: string;
  tool_name: string | null;
  decision: string;
  policy_id?: string | null;
  installation_id: string;
  workspace_id?: string;
  subject: { user_id: string | null; email?: string | null; remote_user_id: string | null; via_installation: boolean };
  encryption: { mode: string };
};

/** The arguments of a record: known, or why not. */
export type ArgsKnowledge = { known: true; args: unknown } | { known: false; why: string };

export type Replayed = { id: string; ts: string; tool: string; user: string; was: string; would: string; policy: string | null };
export type NotJudged = { id: string; ts: string; tool: string; why: string };
export type Simulation = { replayed: number; changed: Replayed[]; not_judged: NotJudged[] };

const MAX_RECORDS = 10_000;

/** The proposed policies of a bundle: the file's entries for its workspace and agent. Pure. */
export function proposedPolicies(file: PolicyFile, bundle: PolicyBundle): BundlePolicy[] {
  return file.policies
    .filter((p) => !p.agent_id || p.agent_id === bundle.agent_id)
    .map((p) => ({
      id: `proposed:${p.name}`,
      name: p.name,
      src: p.src,
      dst: p.dst,
      effect: p.effect,
      ...(p.condition ? { condition: p.condition } : {}),
      ...(p.mode === "shadow" ? { mode: "shadow" as const } : {}),
    }));
}

/** True when some condition on the action reads the arguments (so unknown arguments cannot be judged). */
function readsArgs(bundle: PolicyBundle, tool: string): boolean {
  return bundle.policies.some((p) => p.dst === `tool:${tool}` && p.mode !== "shadow" && !!p.condition && /\bargs\b/.test(p.condition));
}

/** Replays the records against the bundles (installation id → bundle). Pure. */
export function simulate(records: readonly RecordedDecision[], bundles: ReadonlyMap<string, PolicyBundle>, argsOf: (id: string) => ArgsKnowledge): Simulation {
  const sim: Simulation = { replayed: 0, changed: [], not_judged: [] };
  for (const r of records) {
    if (r.kind !== "tool" || !r.tool_name) continue;
    const bundle = bundles.get(r.installation_id);
    if (!bundle) {
      sim.not_judged.push({ id: r.id, ts: r.ts, tool: r.tool_name, why: `installation ${r.installation_id} no longer exists` });
      continue;
    }
    const a = argsOf(r.id);
    if (!a.known && readsArgs(bundle, r.tool_name)) {
      sim.not_judged.push({ id: r.id, ts: r.ts, tool: r.tool_name, why: a.why });
      continue;
    }
    const remote = r.subject.remote_user_id;
    const caller = remote === null ? ({ kind: "installation" } as const) : ({ kind: "linked", remoteUserId: remote, userId: r.subject.user_id ?? "" } as const);
    const d = whatIf(bundle, caller, r.tool_name, { args: a.known ? a.args : {}, now: new Date(r.ts) });
    sim.replayed++;
    if (d.decision !== r.decision) {
      const p = d.policyId ? bundle.policies.find((x) => x.id === d.policyId) : undefined;
      sim.changed.push({
        id: r.id,
        ts: r.ts,
        tool: r.tool_name,
        user: r.subject.email ?? r.subject.user_id ?? remote ?? "installation",
        was: r.decision,
        would: d.decision,
        policy: p ? p.name : (d.message ?? null),
      });
    }
  }
  return sim;
}

async function recordsSince(client: OrgClient, since: string): Promise<{ records: RecordedDecision[]; cut: boolean }> {
  const { items, next_cursor } = await client.collect<RecordedDecision>(client.org("/audit-records"), "records", { query: { kind: "tool", since }, limit: MAX_RECORDS, pageSize: 500 });
  return { records: items, cut: next_cursor !== null };
}

function readIdentities(path: string): string[] {
  const file = expandHome(path, readCliEnv().home);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new CommandFailure(
      `svc policies simulate: cannot read the identity file ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); pass the file \`svc audit keys create\` wrote`,
    );
  }
  const parsed = parseIdentityFile(text);
  if (!parsed.ok) throw new CommandFailure(`svc policies simulate: ${file} is not an age identity file: ${parsed.error}`);
  return parsed.identities;
}

export const simulateCommand = command({
  meta: { name: "simulate", description: "Replay recorded tool decisions against the current or a proposed policy set and print what would change" },
  args: {
    since: { type: "string", required: true, description: "how far back: 7d, 24h, 30m or an ISO 8601 time", valueHint: "7d" },
    file: { type: "string", alias: "f", description: "a proposed policy file (the format of `svc policies export`); default: the current policies", valueHint: "proposed.yaml" },
    identity: { type: "string", description: "an age identity file: records encrypted to it are replayed with their arguments", valueHint: "path" },
    workspace: { type: "string", description: "replay only the decisions of this workspace's installations (id or name)", valueHint: "workspace" },
    ...jsonFlag,
  },
  examples: [
    "svc policies simulate --since 7d",
    "svc policies simulate --since 7d --workspace default",
    "svc policies simulate --since 7d -f proposed.yaml --identity ~/.config/svc/audit-identity.txt",
  ],
  async run({ args }) {
    const proposed = args.file ? parsePolicyFile(readFileSync(args.file, "utf8"), args.file) : null;
    const identities = args.identity ? readIdentities(args.identity) : null;
    const client = await connect("svc policies simulate");
    let workspaceId: string | null = null;
    const named = args.workspace ?? proposed?.workspace;
    if (named !== undefined) {
      const ws = await findWorkspace(client, named);
      if (proposed && args.workspace !== undefined && ws.id !== (await findWorkspace(client, proposed.workspace)).id) {
        throw new UsageError(`${args.file} is for workspace "${proposed.workspace}", but --workspace is "${args.workspace}"; pass the file's workspace or leave out --workspace`);
      }
      workspaceId = ws.id;
    }
    const all = await recordsSince(client, args.since);
    // --workspace: the other workspaces' decisions are left out, not counted
    const records = args.workspace === undefined ? all.records : all.records.filter((r) => r.workspace_id === workspaceId);
    const cut = all.cut;
    const bundles = new Map<string, PolicyBundle>();
    for (const id of new Set(records.map((r) => r.installation_id))) {
      try {
        const b = await fetchBundle(client, id);
        bundles.set(id, proposed && b.workspace_id === workspaceId ? { ...b, policies: proposedPolicies(proposed, b) } : b);
      } catch {
        // a deleted installation: its records are listed as not judged
      }
    }
    const argsMap = new Map<string, { known: true; args: unknown } | { known: false; why: string }>();
    for (const r of records) {
      if (r.encryption.mode !== "recipients") argsMap.set(r.id, { known: false, why: "digest-only: no arguments were stored" });
      else if (!identities) argsMap.set(r.id, { known: false, why: "encrypted: pass --identity to replay it with its arguments" });
      else {
        try {
          const plain = await decryptAgeFile(await client.bytes(client.org(`/audit-records/${seg(r.id)}/ciphertext`)), identities);
          argsMap.set(r.id, { known: true, args: (parseExactJson(new TextDecoder().decode(plain)) as { arguments?: unknown }).arguments ?? {} });
        } catch {
          argsMap.set(r.id, { known: false, why: "encrypted to keys the identity does not hold" });
        }
      }
    }
    const sim = simulate(records, bundles, (id) => argsMap.get(id) ?? { known: false, why: "unknown" });
    if (args.json) return printJson({ ...sim, records: records.length, cut });
    out(
      `Replayed ${sim.replayed} of ${records.length} tool decisions since ${args.since} against ${proposed ? args.file : "the current policies"}: ${sim.changed.length} would change, ${sim.not_judged.length} could not be judged.`,
    );
    if (cut) note(`only the newest ${records.length} records were read; narrow --since to replay the rest`);
    if (sim.changed.length)
      out(
        renderTable(sim.changed, [
          { header: "RECORD", value: (c) => c.id },
          { header: "TIME", value: (c) => c.ts },
          { header: "TOOL", value: (c) => c.tool },
          { header: "USER", value: (c) => c.user },
          { header: "WAS", value: (c) => c.was },
          { header: "WOULD", value: (c) => c.would },
          { header: "BY", value: (c) => c.policy },
        ]),
      );
    if (sim.not_judged.length) {
      out("Not judged (a condition reads args, and the arguments are not available here):");
      out(
        renderTable(sim.not_judged, [
          { header: "RECORD", value: (c) => c.id },
          { header: "TOOL", value: (c) => c.tool },
          { header: "WHY", value: (c) => c.why },
        ]),
      );
    }
  },
});
