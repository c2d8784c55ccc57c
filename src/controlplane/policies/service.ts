// Policies: who (src) may do what (dst), permit or deny, bound to an agent or to every agent
// of a workspace. Deny overrides permit; with no matching permit the answer is deny.
import { and, eq, isNull, or } from "drizzle-orm";
import type { BundlePolicy } from "../../contract/bundle.ts";
import { type Db, schema } from "../db/index.ts";

/** The policies that apply to an agent: those bound to it and those bound to no agent in its workspace. */
export function policiesForAgent(db: Db, workspaceId: string, agentId: string): BundlePolicy[] {
  const p = schema.policies;
  return db
    .select({ id: p.id, name: p.name, src: p.src, dst: p.dst, effect: p.effect })
    .from(p)
    .where(and(eq(p.workspaceId, workspaceId), or(eq(p.agentId, agentId), isNull(p.agentId))))
    .orderBy(p.id)
    .all();
}
