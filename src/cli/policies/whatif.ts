// `svc policies test`: what an installation's proxy would decide for a call, decided by the
// proxy's own code (src/proxy/policy/policy-index.ts) on the bundle the proxy gets (fetched
// from GET /installations/{id}/policy-bundle). A user linked in that installation is decided
// exactly as the proxy decides their front-end id; a user not linked there is decided as a
// service user with their directory groups, and the answer says a real call would first be
// refused identity.unlinked.
import type { User } from "../../contract/admin-api.ts";
import type { PolicyBundle } from "../../contract/bundle.ts";
import { parseExactJson } from "../../contract/exact-json.ts";
import { UsageError, command } from "../../command/index.ts";
import { type CallContext, type Decision, decideTool, decideToolFor, indexBundle } from "../../proxy/policy/policy-index.ts";
import { type OrgClient, connect, seg } from "../shared/client.ts";
import { installationsOf } from "../shared/scope.ts";
import { jsonFlag, out, printJson, renderFields } from "../shared/output.ts";

/** Whom a what-if decides for. */
export type WhatIfCaller =
  | { kind: "linked"; remoteUserId: string; userId: string }
  | { kind: "directory"; userId: string; email: string; groups: string[]; attributes: Record<string, string> }
  | { kind: "installation" };

/** The directory fields a what-if reads. */
type DirectoryUser = Pick<User, "id" | "email" | "display_name" | "source" | "groups">;

/** The caller for a service user: linked in this bundle if they are, else from the directory. Pure. */
export function callerFor(bundle: PolicyBundle, user: DirectoryUser): WhatIfCaller {
  const linked = bundle.identities.find((i) => i.user_id === user.id);
  if (linked) return { kind: "linked", remoteUserId: linked.remote_user_id, userId: user.id };
  return {
    kind: "directory",
    userId: user.id,
    email: user.email,
    groups: [...user.groups].sort(),
    attributes: { source: user.source, ...(user.display_name ? { display_name: user.display_name } : {}) },
  };
}

/** The proxy's decision for the call. Pure: the same functions the proxy's decide route calls. */
export function whatIf(bundle: PolicyBundle, caller: WhatIfCaller, tool: string, call: CallContext): Decision {
  const c = indexBundle(bundle);
  if (caller.kind === "linked") return decideTool(c, { id: caller.remoteUserId }, tool, call);
  if (caller.kind === "installation") return decideTool(c, null, tool, call);
  return decideToolFor(c, { kind: "user", userId: caller.userId, remoteUserId: "", groups: caller.groups, email: caller.email, attributes: caller.attributes }, tool, call);
}

export type WhatIfReport = {
  decision: "permit" | "deny";
  code: string | null;
  message: string | null;
  policy: { id: string; name: string } | null;
  shadow: { decision: string; policy: { id: string; name: string } | null } | null;
  installation_id: string;
  policy_revision: number;
  /** Set when the user has no front-end identity in this installation. */
  not_linked: boolean;
};

export function report(bundle: PolicyBundle, caller: WhatIfCaller, d: Decision): WhatIfReport {
  const named = (id: string | null) => {
    const p = id ? bundle.policies.find((x) => x.id === id) : undefined;
    return p ? { id: p.id, name: p.name } : null;
  };
  return {
    decision: d.decision,
    code: d.code,
    message: d.message,
    policy: named(d.policyId),
    shadow: d.shadow ? { decision: d.shadow.decision, policy: named(d.shadow.policyId) } : null,
    installation_id: bundle.installation_id,
    policy_revision: bundle.revision,
    not_linked: caller.kind === "directory",
  };
}

/**
 * `--args` as JSON: an object, or nothing. Parsed as the proxy parses a call's arguments
 * (parseExactJson): 9007199254740993 stays that integer and 100.00000000000000000001 is read as
 * the proxy reads it, so the answer is the proxy's.
 */
export function parseArgsFlag(raw: string | undefined): Record<string, unknown> {
  if (raw === undefined) return {};
  let v: unknown;
  try {
    v = parseExactJson(raw);
  } catch (e) {
    throw new UsageError(`--args is not JSON (${(e as Error).message}); pass an object such as '{"amount": 200}'`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new UsageError(`--args must be a JSON object such as '{"amount": 200}'`);
  return v as Record<string, unknown>;
}

/** The installation to decide in: the one named, or the only one (of the workspace, with --workspace; else of the organization). */
export async function pickInstallation(client: OrgClient, named: string | undefined, workspace?: string): Promise<string> {
  const scoped = workspace === undefined ? null : await installationsOf(client, workspace);
  const installations = scoped ? scoped.installations : (await client.json<{ installations: { id: string; name: string }[] }>("GET", client.org("/installations"))).installations;
  const where = scoped ? `workspace ${scoped.workspace.name}` : "the organization";
  if (named) {
    if (scoped && !installations.some((i) => i.id === named))
      throw client.fail(`installation ${named} is not in ${where}; pass one of its installations (\`svc bot list --workspace ${scoped.workspace.name}\`) or leave out --workspace`, "not_found");
    return named;
  }
  if (installations.length === 1) return installations[0]!.id;
  throw new UsageError(
    installations.length === 0
      ? `${where} has no installation yet: create one with \`svc bot init\` first`
      : `${where} has ${installations.length} installations; pass --installation with one of: ${installations.map((i) => `${i.id} (${i.name})`).join(", ")}`,
  );
}

/** The current bundle of an installation, as its proxy gets it. */
export async function fetchBundle(client: OrgClient, installationId: string): Promise<PolicyBundle> {
  return client.json<PolicyBundle>("GET", client.org(`/installations/${seg(installationId)}/policy-bundle`));
}

export const testCommand = command({
  meta: { name: "test", description: "What the proxy would decide for a tool call, with the proxy's own code on the current bundle" },
  args: {
    user: { type: "string", required: true, description: "the service user: email or usr_… id", valueHint: "email|usr_id" },
    tool: { type: "string", required: true, description: "the tool's declared name", valueHint: "name" },
    args: { type: "string", description: "the call's arguments as a JSON object (conditions see them as args)", valueHint: "json" },
    installation: { type: "string", description: "the installation whose bundle decides (default: the only one, of the workspace with --workspace)", valueHint: "installation_id" },
    workspace: { type: "string", description: "decide in this workspace's installation (id or name)", valueHint: "workspace" },
    ...jsonFlag,
  },
  examples: [
    "svc policies test --user alice@example.com --tool crm.credit_note --args '{\"amount\": 200}'",
    "svc policies test --user alice@example.com --tool crm.lookup_customer --workspace default",
    "svc policies test --user usr_01J... --tool crm.update --installation inst_01J... --json",
  ],
  async run({ args }) {
    const callArgs = parseArgsFlag(args.args);
    const client = await connect("svc policies test");
    const user = await client.json<User>("GET", client.org(`/users/${seg(args.user)}`));
    const bundle = await fetchBundle(client, await pickInstallation(client, args.installation, args.workspace));
    const caller = callerFor(bundle, user);
    const r = report(bundle, caller, whatIf(bundle, caller, args.tool, { args: callArgs, now: new Date() }));
    if (args.json) return printJson(r);
    out(
      renderFields([
        ["decision", r.decision],
        ["policy", r.policy ? `${r.policy.name} (${r.policy.id})` : "none"],
        ["message", r.message],
        ["shadow", r.shadow ? `would ${r.shadow.decision}${r.shadow.policy ? ` by ${r.shadow.policy.name} (${r.shadow.policy.id})` : ""}` : null],
        ["installation", `${r.installation_id}, policy revision ${r.policy_revision}`],
        ["note", r.not_linked ? `${user.email} has no front-end identity in this installation: a real call is refused identity.unlinked until they link one` : null],
      ]),
    );
  },
});
