// The Cedar peer: the same decision (tool, user → permit/deny) evaluated by Cedar compiled to
// WebAssembly (@cedar-policy/cedar-wasm, the policy set parsed once), served by Bun on a unix
// socket, no audit. argv: <socket> <scenario JSON: {identities:{remote:{user_id,groups}}, permits:{tool:[subject]}, denies:{tool:[subject]}}>.
// Subjects are "user:<id>", "group:<name>" or "*", as in svc's policies.
import { rmSync } from "node:fs";
import * as cedar from "@cedar-policy/cedar-wasm/nodejs";

type Scenario = { identities: Record<string, { user_id: string; groups: string[] }>; permits: Record<string, string[]>; denies: Record<string, string[]> };
const [socket, scenarioJson] = [process.argv[2]!, process.argv[3]!];
const s = JSON.parse(scenarioJson) as Scenario;

const principal = (subject: string) =>
  subject === "*" ? "principal" : subject.startsWith("group:") ? `principal in Group::${JSON.stringify(subject.slice(6))}` : `principal == User::${JSON.stringify(subject.slice(5))}`;
const rules = (effect: "permit" | "forbid", table: Record<string, string[]>) =>
  Object.entries(table).flatMap(([tool, subjects]) => subjects.map((sub) => `${effect}(${principal(sub)}, action == Action::"call", resource == Tool::${JSON.stringify(tool)});`));
const staticPolicies = [...rules("permit", s.permits), ...rules("forbid", s.denies)].join("\n");
const parsed = cedar.preparsePolicySet("svc", { staticPolicies });
if (parsed.type !== "success") throw new Error(`cedar policies: ${JSON.stringify(parsed)}`);

// The entities of each linked user (the user and their groups), built once as a policy store would keep them.
const entities = new Map<string, cedar.EntityJson[]>();
for (const [remote, id] of Object.entries(s.identities)) {
  entities.set(remote, [
    { uid: { type: "User", id: id.user_id }, attrs: {}, parents: id.groups.map((g) => ({ type: "Group", id: g })) },
    ...id.groups.map((g) => ({ uid: { type: "Group", id: g }, attrs: {}, parents: [] })),
  ]);
}

rmSync(socket, { force: true });
Bun.serve({
  unix: socket,
  async fetch(req: Request) {
    const body = (await req.json()) as { tool: string; user: { id: string } | null };
    const known = body.user ? entities.get(body.user.id) : undefined;
    if (!known) return Response.json({ decision: "deny" });
    const answer = cedar.statefulIsAuthorized({
      principal: known[0]!.uid as cedar.EntityUid,
      action: { type: "Action", id: "call" },
      resource: { type: "Tool", id: body.tool },
      context: {},
      preparsedPolicySetId: "svc",
      entities: known,
    });
    const allow = answer.type === "success" && answer.response.decision === "allow";
    return Response.json({ decision: allow ? "permit" : "deny" });
  },
} as unknown as Parameters<typeof Bun.serve>[0]);
console.log("ready");
process.on("SIGTERM", () => process.exit(0));
