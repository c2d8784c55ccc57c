// Policies as code: `svc policies apply -f policies.yaml [--dry-run] [--strict]` makes a
// workspace's policies exactly the file's (matched by name; the control plane plans and applies
// in one transaction, all or nothing), `svc policies export` writes the current set in the same
// format, and `update` / `delete` change one policy.
//
//   workspace: default
//   policies:
//     - name: small credits
//       src: group:sales
//       dst: tool:crm.credit_note
//       effect: permit
//       condition: args.amount <= 500     # optional
//       mode: shadow                      # optional, default enforce
//       agent_id: agt_01J...              # optional, default every agent of the workspace
import { readFileSync } from "node:fs";
import { UsageError, command } from "../../command/index.ts";
import type { Policy, PolicyApplyResult, PolicyPlan, PolicyWritten } from "../../contract/admin-api.ts";
import { connect, seg } from "../shared/client.ts";
import { policyFieldsUsed } from "./fields.ts";
import { bodyEchoProblem, requireFields, unsupportedMessage } from "../shared/server-support.ts";
import { jsonFlag, note, out, printJson } from "../shared/output.ts";
import { requirePolicyInWorkspace } from "../shared/scope.ts";

export const EFFECTS = ["permit", "deny"] as const;
export const MODES = ["enforce", "shadow"] as const;

export type PolicyEntry = { name: string; src: string; dst: string; effect: "permit" | "deny"; condition?: string; mode?: "enforce" | "shadow"; agent_id?: string };
export type PolicyFile = { workspace: string; policies: PolicyEntry[] };
/** The stored fields the file format keeps. */
type StoredPolicy = Pick<Policy, "name" | "src" | "dst" | "effect" | "condition" | "mode" | "agent_id">;

const KEYS = new Set(["name", "src", "dst", "effect", "condition", "mode", "agent_id"]);

/** The file's content checked for shape, with the entry and field named on a problem. Pure. */
export function parsePolicyFile(text: string, file = "the file"): PolicyFile {
  let doc: unknown;
  try {
    doc = Bun.YAML.parse(text);
  } catch (e) {
    throw new UsageError(`${file} is not YAML (${(e as Error).message.split("\n")[0]})`);
  }
  const d = doc as Partial<PolicyFile> | null;
  if (!d || typeof d !== "object" || typeof d.workspace !== "string" || !Array.isArray(d.policies)) {
    throw new UsageError(`${file} must have "workspace: <name or id>" and a "policies:" list, as \`svc policies export\` writes it`);
  }
  d.policies.forEach((p, i) => {
    const where = `${file}: policies[${i}]`;
    if (!p || typeof p !== "object") throw new UsageError(`${where} is not a mapping`);
    for (const k of Object.keys(p)) if (!KEYS.has(k)) throw new UsageError(`${where} has an unknown field "${k}"; the fields are ${[...KEYS].join(", ")}`);
    for (const k of ["name", "src", "dst", "effect"] as const) if (typeof p[k] !== "string") throw new UsageError(`${where} needs ${k} (a string)`);
    if (!(EFFECTS as readonly string[]).includes(p.effect)) throw new UsageError(`${where}: effect must be permit or deny, not "${p.effect}"`);
    if (p.mode !== undefined && !(MODES as readonly string[]).includes(p.mode)) throw new UsageError(`${where}: mode must be enforce or shadow, not "${p.mode}"`);
    for (const k of ["condition", "agent_id"] as const) if (p[k] !== undefined && typeof p[k] !== "string") throw new UsageError(`${where}: ${k} must be a string`);
  });
  return { workspace: d.workspace, policies: d.policies };
}

/** The current set in the file format: defaults left out, sorted by name, so equal sets export equal text. Pure. */
export function toPolicyFile(workspace: string, policies: readonly StoredPolicy[]): PolicyFile {
  const entries = policies.map((p) => ({
    name: p.name,
    src: p.src,
    dst: p.dst,
    effect: p.effect,
    ...(p.condition ? { condition: p.condition } : {}),
    ...(p.mode === "shadow" ? { mode: "shadow" as const } : {}),
    ...(p.agent_id ? { agent_id: p.agent_id } : {}),
  }));
  return { workspace, policies: entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) };
}

export function planText(plan: PolicyPlan): string {
  const lines = [
    ...plan.create.map((c) => `+ create ${c.name}`),
    ...plan.update.map((u) => `~ update ${u.name} (${u.id}): ${u.changes.join(", ")}`),
    ...plan.delete.map((d) => `- delete ${d.name} (${d.id})`),
  ];
  return lines.length ? lines.join("\n") : "No changes: the workspace's policies already match the file.";
}

const apply = command({
  meta: { name: "apply", description: "Make a workspace's policies exactly those of a YAML file: plan, then apply all or nothing" },
  args: {
    file: { type: "string", alias: "f", required: true, description: "the policy file (the format `svc policies export` writes)", valueHint: "policies.yaml" },
    "dry-run": { type: "boolean", description: "print the plan and change nothing" },
    strict: { type: "boolean", description: "refuse a policy naming a tool no installation registered (default: warn)" },
    ...jsonFlag,
  },
  examples: ["svc policies apply -f policies.yaml --dry-run", "svc policies apply -f policies.yaml --strict"],
  async run({ args }) {
    let text: string;
    try {
      text = readFileSync(args.file, "utf8");
    } catch (e) {
      throw new UsageError(`cannot read ${args.file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); pass the path of a policy file`);
    }
    const file = parsePolicyFile(text, args.file);
    const client = await connect("svc policies apply");
    const used = [...new Map(file.policies.flatMap((p) => policyFieldsUsed(p)).map((u) => [u.field, u])).values()];
    await requireFields(client, "POST", "/api/v1/organizations/{org}/policies/apply", used, "policies");
    const r = await client.json<PolicyApplyResult>("POST", client.org("/policies/apply"), {
      body: { workspace: file.workspace, policies: file.policies, dry_run: !!args["dry-run"], strict: !!args.strict },
    });
    for (const w of r.warnings) note(`warning: ${w}`);
    if (args.json) return printJson(r);
    out(planText(r.plan));
    if (r.applied) out(`Applied to workspace ${file.workspace}.`);
    else if (args["dry-run"] && r.plan.create.length + r.plan.update.length + r.plan.delete.length > 0) out("Dry run: nothing was changed.");
  },
});

const exportCmd = command({
  meta: { name: "export", description: "Print a workspace's policies as YAML, the format `svc policies apply` reads" },
  args: { workspace: { type: "string", required: true, description: "workspace id or name", valueHint: "workspace" } },
  examples: ["svc policies export --workspace default > policies.yaml"],
  async run({ args }) {
    const client = await connect("svc policies export");
    const { policies } = await client.json<{ policies: Policy[] }>("GET", client.org("/policies"), { query: { workspace: args.workspace } });
    out(Bun.YAML.stringify(toPolicyFile(args.workspace, policies ?? []), null, 2).trimEnd());
  },
});

const update = command({
  meta: { name: "update", description: "Change a policy's fields; the others stay" },
  args: {
    id: { type: "positional", required: true, description: "the policy id (pol_…)", valueHint: "policy_id" },
    name: { type: "string", description: "new name", valueHint: "name" },
    "src-pattern": { type: "string", description: "who", valueHint: "pattern" },
    "dst-pattern": { type: "string", description: "what", valueHint: "pattern" },
    effect: { type: "string", description: "permit or deny", valueHint: "permit|deny" },
    condition: { type: "string", description: "a CEL condition; an empty string removes it", valueHint: "cel" },
    mode: { type: "string", description: "enforce or shadow", valueHint: "enforce|shadow" },
    workspace: { type: "string", description: "only if the policy is in this workspace (id or name); otherwise nothing changes", valueHint: "workspace" },
    ...jsonFlag,
  },
  examples: [
    "svc policies update pol_01J... --mode enforce",
    "svc policies update pol_01J... --effect deny --workspace default",
    "svc policies update pol_01J... --condition 'args.amount <= 1000'",
    "svc policies update pol_01J... --condition ''",
  ],
  async run({ args }) {
    if (args.effect !== undefined && !(EFFECTS as readonly string[]).includes(args.effect)) throw new UsageError(`--effect must be "permit" or "deny", not "${args.effect}"`);
    if (args.mode !== undefined && !(MODES as readonly string[]).includes(args.mode)) throw new UsageError(`--mode must be "enforce" or "shadow", not "${args.mode}"`);
    const body = {
      ...(args.name !== undefined ? { name: args.name } : {}),
      ...(args["src-pattern"] !== undefined ? { src: args["src-pattern"] } : {}),
      ...(args["dst-pattern"] !== undefined ? { dst: args["dst-pattern"] } : {}),
      ...(args.effect !== undefined ? { effect: args.effect } : {}),
      ...(args.condition !== undefined ? { condition: args.condition === "" ? null : args.condition } : {}),
      ...(args.mode !== undefined ? { mode: args.mode } : {}),
    };
    if (Object.keys(body).length === 0) throw new UsageError("nothing to change: pass at least one of --name, --src-pattern, --dst-pattern, --effect, --condition, --mode");
    const client = await connect("svc policies update");
    if (args.workspace !== undefined) await requirePolicyInWorkspace(client, args.id, args.workspace);
    const used = policyFieldsUsed(body);
    await requireFields(client, "PATCH", "/api/v1/organizations/{org}/policies/{id}", used);
    const p = await client.json<PolicyWritten>("PATCH", client.org(`/policies/${seg(args.id)}`), { body });
    const dropped = bodyEchoProblem(body, p as unknown as Record<string, unknown>, used, { mode: "enforce" });
    if (dropped) throw client.fail(`${unsupportedMessage(dropped, client.serverVersion)}; it changed the rest of policy ${p.id}: check it with \`svc policies list\``, "unsupported_by_control_plane");
    for (const w of p.warnings ?? []) note(`warning: ${w}`);
    if (args.json) return printJson(p);
    out(`Updated policy ${p.id} (${p.name}): ${p.effect} ${p.src} → ${p.dst}${p.condition ? ` when ${p.condition}` : ""}${p.mode === "shadow" ? " (shadow)" : ""}.`);
  },
});

const del = command({
  meta: { name: "delete", description: "Delete a policy" },
  args: {
    id: { type: "positional", required: true, description: "the policy id (pol_…)", valueHint: "policy_id" },
    workspace: { type: "string", description: "only if the policy is in this workspace (id or name); otherwise nothing is deleted", valueHint: "workspace" },
    ...jsonFlag,
  },
  examples: ["svc policies delete pol_01J...", "svc policies delete pol_01J... --workspace default --json"],
  async run({ args }) {
    const client = await connect("svc policies delete");
    if (args.workspace !== undefined) await requirePolicyInWorkspace(client, args.id, args.workspace);
    await client.json("DELETE", client.org(`/policies/${seg(args.id)}`));
    if (args.json) return printJson({ deleted: args.id });
    out(`Deleted policy ${args.id}.`);
  },
});

export const codeCommands = { apply, export: exportCmd, update, delete: del };
