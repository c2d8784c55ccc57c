// `svc policies create|list` (spec §2 "Policy"). Patterns are checked here with the same
// parser the control plane uses, plus the shape of a service user id, so a typo is named
// before anything is sent (exit 2, invalid_pattern).
import { UsageError, command } from "../../command/index.ts";
import type { Policy, PolicyWritten } from "../../contract/admin-api.ts";
import { parseDestination, parseSource, userIdProblem } from "../../contract/patterns.ts";
import { connect } from "../shared/client.ts";
import { policyFieldsUsed, undoUnless } from "./fields.ts";
import { requireFields } from "../shared/server-support.ts";
import { codeCommands, EFFECTS, MODES } from "./code.ts";
import { simulateCommand } from "./simulate.ts";
import { testCommand } from "./whatif.ts";
import { jsonFlag, note, out, printJson, printList, shortTime } from "../shared/output.ts";

/** The first bad pattern as one sentence that names the flag and says what to write, or null. Pure. */
export function patternProblem(src: string, dst: string): string | null {
  const s = parseSource(src);
  if (!s.ok) {
    // An unquoted * is expanded by the shell into file names before svc sees it.
    const glob = !src.includes(":") ? "; write '*' in quotes so the shell does not expand it" : "";
    return `${s.error}; fix --src-pattern and run it again${glob}`;
  }
  if (s.value.kind === "user") {
    const problem = userIdProblem(src, s.value.id);
    if (problem) return problem;
  }
  const d = parseDestination(dst);
  if (!d.ok) return `${d.error}; fix --dst-pattern and run it again`;
  return null;
}

const create = command({
  meta: { name: "create", description: "Create a policy: who (src) may do what (dst)" },
  args: {
    name: { type: "string", required: true, description: "policy name", valueHint: "name" },
    "src-pattern": { type: "string", required: true, description: 'who: "user:<usr_id>" (a service user id, see `svc users resolve`), "group:<name>" or "*" (quoted)', valueHint: "pattern" },
    "dst-pattern": { type: "string", required: true, description: 'what: "model:invoke" or "tool:<name>" (the declared tool name exactly)', valueHint: "pattern" },
    effect: { type: "string", required: true, description: "permit (the only effect the setup flow uses), or deny (a deny overrides permits)", valueHint: "permit|deny" },
    "agent-id": { type: "string", description: "bind the policy to this agent (agt_…)", valueHint: "agent_id" },
    workspace: { type: "string", required: true, description: "workspace id or name", valueHint: "workspace" },
    condition: { type: "string", description: "a CEL condition over args, user (id, email, groups, attributes) and now; the policy applies only when it is true", valueHint: "cel" },
    mode: { type: "string", description: "enforce (default), or shadow: evaluated and recorded on the audit record, never changes the outcome", valueHint: "enforce|shadow" },
    strict: { type: "boolean", description: "refuse a policy naming a tool no installation registered (default: warn)" },
    ...jsonFlag,
  },
  examples: [
    "svc policies create --name small-credits --src-pattern group:sales --dst-pattern tool:crm.credit_note --effect permit --condition 'args.amount <= 500' --agent-id agt_01J... --workspace default",
    "svc policies create --name office-hours --src-pattern '*' --dst-pattern tool:crm.update --effect deny --condition \"now.getHours('Europe/Berlin') < 8 || now.getDayOfWeek('Europe/Berlin') in [0, 6]\" --mode shadow --workspace default",
    "svc policies create --name chat --src-pattern '*' --dst-pattern model:invoke --effect permit --agent-id agt_01J... --workspace default",
    "svc policies create --name crm-writers --src-pattern group:sales --dst-pattern tool:crm.update --effect permit --agent-id agt_01J... --workspace default",
    "svc policies create --name alice-reads --src-pattern user:usr_01J... --dst-pattern tool:crm.lookup --effect permit --agent-id agt_01J... --workspace default",
  ],
  async run({ args }) {
    if (!(EFFECTS as readonly string[]).includes(args.effect)) throw new UsageError(`--effect must be "permit" or "deny", not "${args.effect}"`);
    if (args.mode !== undefined && !(MODES as readonly string[]).includes(args.mode)) throw new UsageError(`--mode must be "enforce" or "shadow", not "${args.mode}"`);
    const problem = patternProblem(args["src-pattern"], args["dst-pattern"]);
    if (problem) throw new UsageError(problem, "invalid_pattern");
    const client = await connect("svc policies create");
    const body = {
      name: args.name,
      src: args["src-pattern"],
      dst: args["dst-pattern"],
      effect: args.effect,
      workspace: args.workspace,
      ...(args["agent-id"] ? { agent_id: args["agent-id"] } : {}),
      ...(args.condition !== undefined ? { condition: args.condition } : {}),
      ...(args.mode ? { mode: args.mode } : {}),
      ...(args.strict ? { strict: true } : {}),
    };
    // A control plane too old for --condition or --mode would store a wider policy (issue 29).
    const used = policyFieldsUsed(body);
    await requireFields(client, "POST", "/api/v1/organizations/{org}/policies", used);
    const policy = await client.json<PolicyWritten>("POST", client.org("/policies"), { body });
    await undoUnless(client, body, policy, used);
    for (const w of policy.warnings ?? []) note(`warning: ${w}`);
    if (args.json) return printJson(policy);
    out(
      `Created policy ${policy.id} (${policy.name}): ${policy.effect} ${policy.src} → ${policy.dst}${policy.condition ? ` when ${policy.condition}` : ""}${policy.agent_id ? ` for agent ${policy.agent_id}` : ""}${policy.mode === "shadow" ? " (shadow: recorded, not enforced)" : ""}.`,
    );
  },
});

const list = command({
  meta: { name: "list", description: "List the policies of a workspace" },
  args: {
    workspace: { type: "string", required: true, description: "workspace id or name", valueHint: "workspace" },
    "agent-id": { type: "string", description: "only policies bound to this agent", valueHint: "agent_id" },
    ...jsonFlag,
  },
  examples: ["svc policies list --workspace default", "svc policies list --workspace default --agent-id agt_01J... --json"],
  async run({ args }) {
    const client = await connect("svc policies list");
    const { policies } = await client.json<{ policies: Policy[] }>("GET", client.org("/policies"), { query: { workspace: args.workspace, agent_id: args["agent-id"] } });
    printList(
      policies ?? [],
      [
        { header: "ID", value: (p) => p.id },
        { header: "NAME", value: (p) => p.name },
        { header: "SRC", value: (p) => p.src },
        { header: "DST", value: (p) => p.dst },
        { header: "EFFECT", value: (p) => p.effect },
        { header: "MODE", value: (p) => p.mode ?? "enforce" },
        { header: "CONDITION", value: (p) => p.condition ?? "" },
        { header: "AGENT", value: (p) => p.agent_id },
        { header: "CREATED", value: (p) => shortTime(p.created_at) },
      ],
      { json: !!args.json, empty: `No policies in workspace ${args.workspace}.`, jsonValue: { policies: policies ?? [] } },
    );
  },
});

export const policiesCommand = command({
  meta: { name: "policies", description: "Policies: who may call the model and which governed tools" },
  examples: ["svc policies create --name chat --src-pattern '*' --dst-pattern model:invoke --effect permit --agent-id agt_01J... --workspace default", "svc policies list --workspace default"],
  subCommands: { create, list, test: testCommand, simulate: simulateCommand, ...codeCommands },
});
