// Which identity an upstream HTTP request presents (issue 32). The MCP SDK sends each JSON-RPC
// message as one fetch through our own fetch function, with no way to pass per-call headers; so
// a tool call runs its SDK request inside `callScope` (AsyncLocalStorage), and the fetch function
// asks `presentIdentity` for the header of whichever call it is sending for. Requests outside
// any call (initialize, tools/list, the SSE stream, session close) present the runtime itself.
import { AsyncLocalStorage } from "node:async_hooks";
import type { AssertionSubject } from "../../contract/identity-assertion.ts";
import type { UpstreamIdentity } from "../../contract/audit.ts";
import type { AuditRecord } from "../../contract/audit.ts";
import type { CompiledBundle } from "../policy/policy-index.ts";
import type { Minted } from "./assertion.ts";

/** A server that asks for assertions: the header, and a function that mints one for a user's call or (null) the runtime. */
export type AssertionSource = { header: string; mint: (subject: AssertionSubject | null) => Promise<Minted> };

/** What a call in flight carries for its upstream identity: who it is for, and (after) what was presented. */
export type IdentifiedCall = { identity?: AssertionSubject; presented?: UpstreamIdentity | null };

export const callScope = new AsyncLocalStorage<IdentifiedCall>();

/**
 * Sets the assertion header on a request's headers; notes on the call what was presented. A
 * call whose decision named no service user of the identity map (made for the installation)
 * presents the runtime itself, and its record names that assertion too.
 */
export async function presentIdentity(headers: Headers, source: AssertionSource): Promise<void> {
  const call = callScope.getStore();
  const minted = await source.mint(call?.identity ?? null);
  headers.set(source.header, minted.value);
  if (call) call.presented = minted.presented;
}

/** The identity a permitted call is made for: the service user its decision record names, from the bundle's identity map. */
export function callIdentity(compiled: Pick<CompiledBundle, "identities">, record: Pick<AuditRecord, "id" | "subject">, upstreamTool: string): AssertionSubject | undefined {
  const remote = record.subject.remote_user_id;
  const who = remote === null ? undefined : compiled.identities.get(remote);
  if (!who || who.user_id !== record.subject.user_id) return undefined;
  return { sub: who.user_id, email: who.email, groups: [...who.groups], tool: upstreamTool, audit_record_id: record.id };
}
