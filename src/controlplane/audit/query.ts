// The admin audit view: search newest first with an opaque id cursor, one record, and the
// stored ciphertext as bytes for `svc audit decrypt`. Records show whether they are encrypted
// (to which key ids) or digest-only; the search never returns ciphertext.
// A tool+decision search rides the (org, tool, decision, id) index; user, installation and
// args-digest searches their own (org, …, id) indexes; the rest the (org, id) index, newest
// first. The admin trail's filters (issue 27): kind admin, action and result ride the partial
// (org, id) index of admin events (`kind = 'admin'` written as a literal, so the index serves
// it), the actor the (org, actor, id) index.
import { and, desc, eq, gte, inArray, isNotNull, isNull, lt, lte, ne, or, type SQL, sql } from "drizzle-orm";
import { SYSTEM_ACTOR_PREFIX, actionFilterProblem } from "../../contract/admin-event.ts";
import { SvcError } from "../../contract/errors.ts";
import { type Db, type Tables, rawStatements, tables } from "../db/index.ts";
import { findAccountByEmail } from "../auth/service.ts";
import { emailsOfUsers, findUserByEmail } from "../directory/service.ts";
import { idBounds, literalPrefix, prefixSuccessor } from "./bounds.ts";
import { newestInTwoSteps } from "./newest.ts";
import { parseSince } from "./usage.ts";
import { type AuditRecordView, type Row, recordView } from "./view.ts";

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;

export type AuditFilters = {
  /** a tool name prefix (`crm.`), or a glob with * and ? (`crm.*.read`) */
  tool?: string;
  decision?: "permit" | "deny" | "ask";
  /** user id (usr_…) or email */
  user?: string;
  installation?: string;
  /** records this policy decided, or would have decided as a shadow policy (pol_…) */
  policy?: string;
  /** "changed": only records whose shadow decision differs from the enforced one */
  shadow?: "changed";
  /**
   * Calls with the same arguments (`hmac-sha256:…`): a digest groups calls only within the key
   * that made it, so `digest_key_id` narrows it to one key (docs/digest-key.md).
   */
  args_digest?: string;
  digest_key_id?: string;
  /** "runtime": every kind but admin (what the runtimes recorded) */
  kind?: "tool" | "model" | "outcome" | "admin" | "runtime";
  /** admin events of this actor: an account id (acc_…), an email, `system:<component>` or `anonymous` */
  actor?: string;
  /** admin events of this action (`policy.update`), or of a prefix ending in * (`policy.*`) */
  action?: string;
  /** admin events that were carried out ("ok") or refused */
  result?: "ok" | "refused";
  /** Open WebUI's background tasks (titles, tags, follow-ups): "hide" leaves them out, "only" shows nothing else */
  background?: "hide" | "only";
  /** ISO 8601, inclusive */
  from?: string;
  /** ISO 8601, inclusive */
  to?: string;
  /** 7d, 24h, 30m ago or an ISO 8601 time, inclusive (as `svc usage --since`) */
  since?: string;
  /** 7d, 24h, 30m ago or an ISO 8601 time, exclusive */
  until?: string;
  /**
   * "calls": one entry per call: the decision records only (never an outcome), each with its
   * outcome record's summary in `call_outcome` (null while none arrived), as the console's audit
   * page shows them. Default: every record, outcomes as records of their own.
   */
  view?: "calls" | "records";
  cursor?: string;
  limit?: number;
};

/** What the console shows of a call's outcome beside its decision (issue 33): enough to read, and the record's id to open it. */
export type CallOutcome = { id: string; ts: string; outcome: string | null; exit_code: number | null; duration_ms?: number; prompt_tokens?: number; completion_tokens?: number | null; cost?: number };

/** Every column but the ciphertext. */
export const viewColumns = (a: Tables["auditRecords"]) => ({
  id: a.id,
  ts: a.ts,
  receivedAt: a.receivedAt,
  kind: a.kind,
  harness: a.harness,
  orgId: a.orgId,
  workspaceId: a.workspaceId,
  installationId: a.installationId,
  agentId: a.agentId,
  replicaId: a.replicaId,
  action: a.action,
  toolName: a.toolName,
  toolServer: a.toolServer,
  upstreamIdentity: a.upstreamIdentity,
  model: a.model,
  task: a.task,
  decision: a.decision,
  reason: a.reason,
  policyId: a.policyId,
  policyRevision: a.policyRevision,
  shadowDecision: a.shadowDecision,
  shadowPolicyId: a.shadowPolicyId,
  shadowReason: a.shadowReason,
  userId: a.userId,
  remoteUserId: a.remoteUserId,
  viaInstallation: a.viaInstallation,
  ref: a.ref,
  outcome: a.outcome,
  exitCode: a.exitCode,
  argsDigest: a.argsDigest,
  digestKeyId: a.digestKeyId,
  recipientKeyIds: a.recipientKeyIds,
  promptTokens: a.promptTokens,
  completionTokens: a.completionTokens,
  cost: a.cost,
  durationMs: a.durationMs,
  chainId: a.chainId,
  chainSeq: a.chainSeq,
  chainPrev: a.chainPrev,
  actorId: a.actorId,
  target: a.target,
  detail: a.detail,
  storeChain: a.storeChain,
  storeSeq: a.storeSeq,
  storePrev: a.storePrev,
});

export { type AuditRecordView, type Row, recordView } from "./view.ts";

export function encodeCursor(id: string): string {
  return Buffer.from(`v1:${id}`).toString("base64url");
}

export function decodeCursor(cursor: string): string {
  const raw = Buffer.from(cursor, "base64url").toString();
  if (!raw.startsWith("v1:rec_")) throw new SvcError("validation_failed", "the cursor is not one this service returned; start again without it");
  return raw.slice(3);
}

function parseTime(name: string, value: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new SvcError("validation_failed", `${name}="${value}" is not an ISO 8601 time (e.g. 2025-01-31T00:00:00Z)`);
  return ms;
}

/** The LIKE pattern of a tool filter: a glob's * and ? become % and _, anything else is a prefix. Pure. */
export function toolPattern(filter: string): string {
  const escaped = filter.replace(/[\\%_]/g, (c) => `\\${c}`);
  if (!/[*?]/.test(filter)) return `${escaped}%`;
  return escaped.replace(/\*/g, "%").replace(/\?/g, "_");
}

/** The conditions every filter adds, for search, export and the console. */
export async function filterConditions(db: Db, orgId: string, f: Omit<AuditFilters, "cursor" | "limit">, now: number): Promise<SQL[] | null> {
  const a = tables(db).auditRecords;
  const conds: SQL[] = [eq(a.orgId, orgId)];
  if (f.tool) {
    // The range reads the tool index (bounds.ts); the standard LIKE with an explicit escape
    // character (the same on both stores) keeps a glob's exact matches.
    const prefix = literalPrefix(f.tool);
    const above = prefixSuccessor(prefix);
    // The names the prefix stands for, when they are few: equality on the tool index then also
    // serves a decision (after a range on the tool, it could not) and a page sorts less.
    const names = prefix === "" || readsOwnIndex(f) ? null : await toolNames(db, orgId, prefix, above);
    if (names?.length === 0) return null;
    // With a user, an installation or a digest, their (org, …, id) index is the narrower one: the
    // tool is then only checked (a term on the tool index would draw the planner to it).
    if (!readsOwnIndex(f)) {
      const tool = bytewiseTool(db);
      if (names) conds.push(inArray(tool, names));
      else {
        if (prefix !== "") conds.push(gte(tool, prefix));
        if (above !== null) conds.push(lt(tool, above));
      }
    }
    conds.push(sql`${a.toolName} LIKE ${toolPattern(f.tool)} ESCAPE '\\'`);
  }
  // kind and decision as literals (closed sets, never input text): PostgreSQL's plan then sees
  // how rare the value is and reads (org, decision, id) or (org, kind, id) for a rare one.
  if (f.decision) conds.push(sql`${a.decision} = ${literalOf(DECISIONS, f.decision, "decision")}`);
  if (f.installation) conds.push(eq(a.installationId, f.installation));
  // Admin events' filters imply kind admin, as a literal: the partial index of admin events serves it.
  const admin = f.kind === "admin" || f.action !== undefined || f.result !== undefined;
  if (admin) conds.push(sql`${a.kind} = 'admin'`);
  else if (f.kind === "runtime") conds.push(ne(a.kind, "admin"));
  else if (f.kind) conds.push(sql`${a.kind} = ${literalOf(KINDS, f.kind, "kind")}`);
  if (f.action !== undefined) conds.push(actionCondition(a, f.action));
  // An expression, not the column: the (org, decision, id) index would walk every runtime
  // decision of the organization; the admin events' few rows are read from their own index.
  if (f.result) conds.push(sql`(${a.decision} || '') = ${f.result === "ok" ? "permit" : "deny"}`);
  if (f.actor !== undefined) {
    const ids = await actorIds(db, orgId, f.actor);
    if (ids.length === 0) return null;
    conds.push(inArray(a.actorId, ids));
  }
  if (f.background === "hide") conds.push(isNull(a.task));
  if (f.background === "only") conds.push(isNotNull(a.task));
  if (f.policy) conds.push(or(eq(a.policyId, f.policy), eq(a.shadowPolicyId, f.policy))!);
  if (f.shadow === "changed") conds.push(isNotNull(a.shadowDecision), ne(a.shadowDecision, a.decision));
  if (f.args_digest) conds.push(eq(a.argsDigest, f.args_digest));
  if (f.digest_key_id) conds.push(eq(a.digestKeyId, f.digest_key_id));
  if (f.user) {
    const userId = f.user.startsWith("usr_") ? f.user : (await findUserByEmail(db, orgId, f.user))?.id;
    if (!userId) return null;
    conds.push(eq(a.userId, userId));
  }
  // Time filters bound the time-ordered ids too (bounds.ts), so every index ordered by id reads only the span.
  const { from, to } = timeSpan(f, now);
  if (from !== null) conds.push(gte(a.ts, from));
  if (to !== null) conds.push(lte(a.ts, to));
  conds.push(...idConditions(a, from, to));
  return conds;
}

const DECISIONS = ["permit", "deny", "ask"] as const;
const KINDS = ["tool", "model", "outcome"] as const;

/** A value of a closed set as an SQL literal; anything else is a 422 naming the filter. */
function literalOf(allowed: readonly string[], value: string, name: string): SQL {
  if (!allowed.includes(value))
    throw new SvcError("validation_failed", `${name} must be one of ${allowed.join(", ")}`, { errors: [{ path: `/${name}`, message: `must be one of ${allowed.join(", ")}` }] });
  return sql.raw(`'${value}'`);
}

/** The records' dates a search's time filters allow, both ends inclusive (null: open). */
/** The id range of records dated from `from` to `to` (bounds.ts). */
function idConditions(a: Tables["auditRecords"], from: number | null, to: number | null): SQL[] {
  const ids = idBounds(from, to);
  return [...(ids.min !== null ? [gte(a.id, ids.min)] : []), ...(ids.below !== null ? [lt(a.id, ids.below)] : [])];
}

function timeSpan(f: Pick<AuditFilters, "from" | "to" | "since" | "until">, now: number): { from: number | null; to: number | null } {
  const lows = [f.from && parseTime("from", f.from), f.since && parseSince(f.since, now)].filter((t): t is number => typeof t === "number");
  const highs = [f.to && parseTime("to", f.to), f.until && parseSince(f.until, now) - 1].filter((t): t is number => typeof t === "number");
  return { from: lows.length > 0 ? Math.max(...lows) : null, to: highs.length > 0 ? Math.min(...highs) : null };
}

const MAX_TOOL_NAMES = 32;

/** Whether a search has a filter with an (org, …, id) index of its own, narrower than a tool's. */
function readsOwnIndex(f: Pick<AuditFilters, "user" | "installation" | "args_digest">): boolean {
  return f.user !== undefined || f.installation !== undefined || f.args_digest !== undefined;
}

/**
 * The organization's tool names in [prefix, above), one seek of the tool index each, or null when
 * there are more than MAX_TOOL_NAMES (the range is read instead).
 */
async function toolNames(db: Db, orgId: string, prefix: string, above: string | null): Promise<string[] | null> {
  const a = tables(db).auditRecords;
  const tool = bytewiseTool(db);
  const names: string[] = [];
  for (let next: SQL = gte(tool, prefix); names.length <= MAX_TOOL_NAMES; ) {
    const [row] = await db
      .select({ name: sql<string | null>`${tool}` })
      .from(a)
      .where(and(eq(a.orgId, orgId), next, ...(above !== null ? [lt(tool, above)] : [])))
      .orderBy(tool)
      .limit(1);
    if (!row?.name) return names;
    names.push(row.name);
    next = sql`${tool} > ${row.name}`;
  }
  return null;
}

/**
 * tool_name in byte order, as the tool index holds it (tables.ts, bounds.ts): on PostgreSQL the
 * index's own expression, `(tool_name COLLATE "C")` (a range, an order or an equality on the bare
 * column, under the database's collation, would not read it); on SQLite the column (BINARY).
 */
function bytewiseTool(db: Db): SQL {
  const a = tables(db).auditRecords;
  return rawStatements(db).dialect === "postgres" ? sql`(${a.toolName} COLLATE "C")` : sql`${a.toolName}`;
}

/** An action filter: the name, or a prefix ending in *; 422 naming what is wrong. */
function actionCondition(a: Tables["auditRecords"], filter: string): SQL {
  const problem = actionFilterProblem(filter);
  if (problem) throw new SvcError("validation_failed", `action: ${problem}`, { errors: [{ path: "/action", message: problem }] });
  if (!filter.endsWith("*")) return eq(a.action, filter);
  // A known prefix (checked above) holds no * or ?: the tool filter's pattern makes it a prefix.
  return sql`${a.action} LIKE ${toolPattern(filter.slice(0, -1))} ESCAPE '\\'`;
}

/**
 * The actor ids an actor filter stands for: an id as given (`acc_…`, `system:…`, `anonymous`);
 * an email, the account with it and the organization's service user with it (an invitee).
 */
async function actorIds(db: Db, orgId: string, actor: string): Promise<string[]> {
  const value = actor.trim();
  if (!value.includes("@") || value.startsWith(SYSTEM_ACTOR_PREFIX)) return [value];
  const [account, user] = await Promise.all([findAccountByEmail(db, value), findUserByEmail(db, orgId, value)]);
  return [account?.id, user?.id].filter((id): id is string => !!id);
}

/**
 * The outcome records of these decisions, by decision id (the (org, ref) partial index). A
 * decision has at most one outcome; should a runtime have sent two, the later one is shown.
 */
export async function outcomesOf(db: Db, orgId: string, decisionIds: readonly string[]): Promise<Map<string, CallOutcome>> {
  const out = new Map<string, CallOutcome>();
  if (decisionIds.length === 0) return out;
  const a = tables(db).auditRecords;
  const rows = await db
    .select({ id: a.id, ts: a.ts, ref: a.ref, outcome: a.outcome, exitCode: a.exitCode, durationMs: a.durationMs, promptTokens: a.promptTokens, completionTokens: a.completionTokens, cost: a.cost })
    .from(a)
    .where(and(eq(a.orgId, orgId), isNotNull(a.ref), inArray(a.ref, [...decisionIds])));
  // Ordered here, not in SQL: an ORDER BY id makes SQLite walk the organization's id index instead.
  rows.sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  for (const r of rows) {
    out.set(r.ref!, {
      id: r.id,
      ts: new Date(r.ts).toISOString(),
      outcome: r.outcome,
      exit_code: r.exitCode,
      ...(r.durationMs !== null ? { duration_ms: r.durationMs } : {}),
      ...(r.promptTokens !== null ? { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens } : {}),
      ...(r.cost !== null ? { cost: r.cost } : {}),
    });
  }
  return out;
}

export async function searchRecords(
  db: Db,
  orgId: string,
  f: AuditFilters,
  now = Date.now(),
): Promise<{ records: Array<AuditRecordView & { call_outcome?: CallOutcome | null }>; next_cursor: string | null }> {
  const a = tables(db).auditRecords;
  const limit = f.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new SvcError("validation_failed", `limit must be between 1 and ${MAX_LIMIT}`);
  if (f.view === "calls" && f.kind === "outcome")
    throw new SvcError("validation_failed", "view=calls shows each call's outcome beside its decision; ask for kind=outcome without it", {
      errors: [{ path: "/view", message: "cannot be combined with kind=outcome" }],
    });
  // A policy's records are two reads (below) unless a tool prefix reads its own way; the two reads
  // carry none of filterConditions' "enforced or shadow" OR, which made PostgreSQL fetch every
  // shadow row of the policy into a bitmap and sort them (0.9 s at 5M) instead of reading its
  // partial index newest first.
  const prefixRead = f.tool !== undefined && !readsOwnIndex(f);
  const policyReads = f.policy !== undefined && !prefixRead;
  const { policy: _policy, ...unlessPolicy } = f;
  const conds = await filterConditions(db, orgId, policyReads ? unlessPolicy : f, now);
  if (!conds) return { records: [], next_cursor: null };
  // One entry per call: never an outcome record, whatever kind is asked for (kind=outcome is refused above).
  if (f.view === "calls") conds.push(ne(a.kind, "outcome"));
  if (f.cursor) conds.push(lt(a.id, decodeCursor(f.cursor)));

  const read = async (extra: SQL[], n: number): Promise<Row[]> =>
    db
      .select(viewColumns(a))
      .from(a)
      .where(and(...conds, ...extra))
      .orderBy(desc(a.id))
      .limit(n);
  // A tool prefix reads an index not in id order: newest first in two steps (newest.ts). A
  // policy's records, enforced or shadow, are two reads in id order (its two partial indexes), merged.
  const span = timeSpan(f, now);
  const rows = prefixRead
    ? await newestInTwoSteps(db, limit + 1, [eq(a.orgId, orgId), ...(f.cursor ? [lt(a.id, decodeCursor(f.cursor))] : []), ...idConditions(a, span.from, span.to)], read)
    : policyReads
      ? newestOf([...(await read([eq(a.policyId, f.policy!)], limit + 1)), ...(await read([eq(a.shadowPolicyId, f.policy!)], limit + 1))], limit + 1)
      : await read([], limit + 1);
  const page = rows.slice(0, limit);
  const emails = await emailsOfUsers(
    db,
    orgId,
    page.flatMap((r) => (r.userId ? [r.userId] : [])),
  );
  const outcomes =
    f.view === "calls"
      ? await outcomesOf(
          db,
          orgId,
          page.filter((r) => r.kind !== "admin").map((r) => r.id),
        )
      : null;
  return {
    records: page.map((r) => {
      const view = recordView(r, r.userId ? (emails.get(r.userId) ?? null) : null);
      return outcomes && r.kind !== "admin" ? { ...view, call_outcome: outcomes.get(r.id) ?? null } : view;
    }),
    next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.id) : null,
  };
}

/** The `n` newest of rows (a row in both lists once). Pure. */
function newestOf(rows: Row[], n: number): Row[] {
  const byId = new Map(rows.map((r) => [r.id, r]));
  return [...byId.values()].sort((x, y) => (x.id < y.id ? 1 : x.id > y.id ? -1 : 0)).slice(0, n);
}

export async function getRecord(db: Db, orgId: string, id: string): Promise<AuditRecordView & { call_outcome?: CallOutcome | null }> {
  const a = tables(db).auditRecords;
  const [row] = await db
    .select(viewColumns(a))
    .from(a)
    .where(and(eq(a.orgId, orgId), eq(a.id, id)));
  if (!row) throw new SvcError("not_found", `audit record ${id} not found`);
  const email = row.userId ? ((await emailsOfUsers(db, orgId, [row.userId])).get(row.userId) ?? null) : null;
  const view = recordView(row, email);
  // A decision names its outcome record (an outcome names its decision in `ref`): each one click from the other.
  if (row.kind === "tool" || row.kind === "model") return { ...view, call_outcome: (await outcomesOf(db, orgId, [row.id])).get(row.id) ?? null };
  return view;
}

/** The record's age ciphertext; 404 not_found when the record is digest-only. */
export async function recordCiphertext(db: Db, orgId: string, id: string): Promise<Uint8Array<ArrayBuffer>> {
  const a = tables(db).auditRecords;
  const [row] = await db
    .select({ ciphertext: a.ciphertext })
    .from(a)
    .where(and(eq(a.orgId, orgId), eq(a.id, id)));
  if (!row) throw new SvcError("not_found", `audit record ${id} not found`);
  if (!row.ciphertext || row.ciphertext.length === 0) {
    throw new SvcError("not_found", `audit record ${id} is digest-only: no arguments were stored (no customer key was active when it was written), so there is nothing to decrypt`);
  }
  return new Uint8Array(row.ciphertext);
}
