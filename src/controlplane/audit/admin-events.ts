// Events the control plane writes into the audit trail itself (kind "admin", issue 27): every
// change to the admin plane and every refusal of one, from the API, the CLI, the console,
// directory sync or bootstrap. They sit beside the runtimes' records, so `svc audit list --kind
// admin`, export and the SIEM sinks see them, and they form the organization's own hash chain
// ("controlplane"), signed by the checkpoints like a proxy's, and the "admin" store chain, whose
// form covers every column (actor, target, detail too): deleting or editing one is caught by
// `svc audit verify`. An event names who acted (actor), on what (target), the resource
// before and after (secrets only as digests, contract/admin-event.ts), and the result.
//
// A change and its event are written in ONE transaction (`recordAdminEvent(tx, …)` inside the
// service's own `db.transaction`): no change without its event, no event without its change.
import { and, eq, sql } from "drizzle-orm";
import type { AuditRecord } from "../../contract/audit.ts";
import { ciphertextDigest, recordHash } from "../../contract/audit-chain.ts";
import {
  ADMIN_ACTIONS,
  ANONYMOUS_ACTOR,
  type AdminAction,
  type AdminActor,
  type AdminEventDetail,
  type AdminResult,
  type AdminSeverity,
  type AdminTarget,
  SYSTEM_ACTOR_PREFIX,
} from "../../contract/admin-event.ts";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { appendOwnChain } from "../audit-chain/service.ts";
import type { Principal } from "../auth/principal.ts";
import { type Db, tables } from "../db/index.ts";
import type { RequestOrigin } from "../http/request-gate.ts";
import { extendChain, storeDigest } from "../../contract/store-chain.ts";
import { lockStoreHead, moveStoreHead } from "../audit-chain/store-heads.ts";
import { recordRow } from "./row.ts";
import { storedFromRow } from "./stored.ts";

export type { RequestOrigin } from "../http/request-gate.ts";

/** The chain, installation and agent ids admin events carry: no runtime ever has them. */
export const CONTROL_PLANE_SOURCE = "controlplane";

/** Components that change the admin plane with no person behind the request. */
export type SystemComponent = "bootstrap" | "directory-sync" | "retention" | "checkpoint" | "controlplane";

export type AdminEvent = {
  orgId: string;
  /** The workspace the change concerns; org-wide changes leave it out (stored as "controlplane"). */
  workspaceId?: string | null;
  /** `<resource>.<verb>`, e.g. `policy.create`, `member.role_change` (ADMIN_ACTIONS, docs/audit.md) */
  action: AdminAction;
  actor: AdminActor;
  target: AdminTarget;
  before?: unknown;
  after?: unknown;
  /** "ok" (the default) or "refused" (401/403 and the two-person rule's refusals) */
  result?: AdminResult;
  /** HTTP status answered (default: the action's in ADMIN_ACTIONS for ok, 403 for refused; 0 for the control plane's own work) */
  status?: number;
  /** a refusal's problem code */
  code?: string;
  /** default: the action's in ADMIN_ACTIONS for ok, "high" for refused */
  severity?: AdminSeverity;
  /** What happened, in words (who, what); never secret material. Default: actor, action and target. */
  reason?: string;
  /** The audit record the event is about (an escrow recovery's record). */
  ref?: string | null;
};

/**
 * How a secret appears in an admin event: `sha256:` and the first 16 hex digits of its SHA-256
 * (a runtime token's are the first digits of its stored hash).
 */
export function secretDigest(secret: string | Uint8Array): string {
  return `sha256:${Bun.SHA256.hash(secret, "hex").slice(0, 16)}`;
}

/**
 * A refusal whose service wrote its admin event itself (the two-person rule's, a refused key
 * rotation): the problem names the event (`admin_event`), and the HTTP hook does not record
 * the refusal again (refusals.ts). One refusal, one event.
 */
export function recordedRefusal(error: SvcError, eventId: string): SvcError {
  return new SvcError(error.code, error.message, { ...error.extra, [ADMIN_EVENT_MEMBER]: eventId });
}

/** The problem member naming the admin event a service wrote for its own refusal. */
export const ADMIN_EVENT_MEMBER = "admin_event";

/** The actor of a request made by a signed-in person (auth/plugin.ts fills in address and agent). */
export function actorOf(p: Principal): AdminActor {
  return {
    id: p.accountId,
    email: p.email,
    role: p.role,
    credential: { kind: p.via === "token" ? "api_token" : "session", id: p.credentialId ?? null },
    ip: p.ip ?? null,
    user_agent: p.userAgent ?? null,
  };
}

/** The actor of work the control plane does on its own (a scheduler, directory sync, bootstrap). */
export function systemActor(component: SystemComponent): AdminActor {
  return { id: `${SYSTEM_ACTOR_PREFIX}${component}`, email: null, role: null, credential: { kind: "system", id: component }, ip: null, user_agent: null };
}

/** The actor of a request that proved no identity (a 401), or a person not yet known (a failed sign-in). */
export function anonymousActor(request: { ip: string | null; userAgent: string | null; email?: string | null }): AdminActor {
  return { id: ANONYMOUS_ACTOR, email: request.email ?? null, role: null, credential: { kind: "none", id: null }, ip: request.ip, user_agent: request.userAgent };
}

/**
 * Who makes a change, and when: what a service takes to write the change's event in its own
 * transaction (`recordChange`). Routes build it from the principal (`acting`).
 */
export type Acting = { actor: AdminActor; at: number };

export function acting(deps: { now: () => number }, p: Principal): Acting {
  return { actor: actorOf(p), at: deps.now() };
}

/** The control plane's own work (a scheduler, directory sync, bootstrap), now. */
export function actingAsSystem(deps: { now: () => number }, component: SystemComponent): Acting {
  return { actor: systemActor(component), at: deps.now() };
}

/** Writes the event of a change `by` made, in the change's transaction `tx`. */
export async function recordChange(tx: Db, by: Acting, e: Omit<AdminEvent, "actor">): Promise<string> {
  return recordAdminEvent(tx, { ...e, actor: by.actor }, by.at);
}

function actorLabel(a: AdminActor): string {
  return a.email ?? a.id;
}

/** The event's default `reason`: who did what to which target. */
export function defaultReason(e: AdminEvent): string {
  const what = e.target.name ? `${e.target.type} ${e.target.name}${e.target.id && e.target.id !== e.target.name ? ` (${e.target.id})` : ""}` : `${e.target.type} ${e.target.id ?? ""}`.trim();
  const refused = (e.result ?? "ok") === "refused" ? ` refused${e.code ? ` (${e.code})` : ""}` : "";
  return `${actorLabel(e.actor)}: ${e.action} ${what}${refused}`;
}

/**
 * The actor of a change made by holding a one-time link (an invite: its id) or an approved
 * `svc login` request (redeemed with its poll secret), never the secret itself.
 */
export function holderActor(kind: "link" | "login_request", who: { id: string; email: string | null; role?: string | null; credentialId: string }, origin: RequestOrigin): AdminActor {
  return { id: who.id, email: who.email, role: who.role ?? null, credential: { kind, id: who.credentialId }, ip: origin.ip, user_agent: origin.userAgent };
}

/** The event's `detail` (pure). */
export function eventDetail(e: AdminEvent): AdminEventDetail {
  const result = e.result ?? "ok";
  const spec = ADMIN_ACTIONS[e.action];
  const own = e.actor.credential.kind === "system";
  return {
    v: 1,
    actor: e.actor,
    target: e.target,
    ...(e.before !== undefined ? { before: e.before } : {}),
    ...(e.after !== undefined ? { after: e.after } : {}),
    result,
    status: e.status ?? (result === "refused" ? 403 : own ? 0 : spec.status),
    ...(e.code ? { code: e.code } : {}),
    severity: e.severity ?? (result === "ok" ? spec.severity : "high"),
  };
}

/** Appends one admin event in the caller's transaction; returns its record id. */
export async function recordAdminEvent(tx: Db, e: AdminEvent, now: number): Promise<string> {
  const id = newId("auditRecord", now);
  const detail = eventDetail(e);
  const base = {
    id,
    ts: new Date(now).toISOString(),
    kind: "admin",
    harness: CONTROL_PLANE_SOURCE,
    organization_id: e.orgId,
    workspace_id: e.workspaceId ?? CONTROL_PLANE_SOURCE,
    installation_id: CONTROL_PLANE_SOURCE,
    agent_id: CONTROL_PLANE_SOURCE,
    action: e.action,
    tool_name: null,
    decision: detail.result === "ok" ? "permit" : "deny",
    reason: e.reason ?? defaultReason(e),
    policy_id: null,
    policy_revision: 0,
    // The person, as the admin trail names them; records of runtimes name the chat user here.
    subject: { user_id: null, remote_user_id: e.actor.id, via_installation: false },
    ...(e.ref ? { ref: e.ref } : {}),
    args_digest: null,
    digest_key_id: null,
    recipient_key_ids: [],
    ciphertext: null,
  } as unknown as AuditRecord;
  const link = await appendOwnChain(tx, e.orgId, CONTROL_PLANE_SOURCE, CONTROL_PLANE_SOURCE, now, (l) => recordHash({ ...base, ...l }, ciphertextDigest(null)));
  const target = `${e.target.type}:${e.target.id ?? ""}`;
  const row = { ...recordRow({ ...base, ...link } as AuditRecord, now), actorId: e.actor.id, target, detail: JSON.stringify(detail) };
  // The admin store chain covers every column, actor, target and detail included (store-chain.ts).
  const head = await lockStoreHead(tx, e.orgId, "admin", now);
  const { links, head: next } = extendChain("admin", head, [storeDigest(storedFromRow(row))]);
  await tx.insert(tables(tx).auditRecords).values({ ...row, storeChain: "admin", storeSeq: links[0]!.seq, storePrev: links[0]!.prev });
  await moveStoreHead(tx, e.orgId, "admin", next, now);
  return id;
}

/**
 * Whether the organization's admin trail holds an event of `action`: one walk of its admin
 * events along (org, kind, id), stopped at the first match (audit-chain/rollup-trust.ts asks
 * whether a verification run was ever recorded).
 */
export async function trailHolds(db: Db, orgId: string, action: string): Promise<boolean> {
  const a = tables(db).auditRecords;
  const [event] = await db
    .select({ id: a.id })
    .from(a)
    .where(and(eq(a.orgId, orgId), sql`${a.kind} = 'admin'`, eq(a.action, action)))
    .limit(1);
  return event !== undefined;
}
