// A stored audit row as its store-chain form covers it (contract/store-chain.ts), and as the
// export writes it: the record view, the ciphertext's digest and, for a row whose values the
// view cannot show exactly, those columns as stored (contract/stored-line.ts). Pure.
import { type StoredRecord, STORED_FIELDS } from "../../contract/store-chain.ts";
import { storedOfLine } from "../../contract/stored-line.ts";
import type { Tables } from "../db/index.ts";
import { type AuditRecordView, recordView } from "./view.ts";

/** A row's columns as written (the store link excluded: the link is what covers the rest). */
export type RowColumns = Omit<Tables["auditRecords"]["$inferSelect"], "storeChain" | "storeSeq" | "storePrev" | "rollupPending"> & {
  storeChain?: string | null;
  storeSeq?: number | null;
  storePrev?: string | null;
};

/** SHA-256 hex of stored ciphertext bytes; null when there are none. */
export function bytesDigest(bytes: Uint8Array | null | undefined): string | null {
  return bytes && bytes.length > 0 ? Bun.SHA256.hash(bytes, "hex") : null;
}

/** `ciphertextSha256`: the ciphertext's digest when the caller has it already (one SHA-256 of the bytes per row). */
export function storedFromRow(r: RowColumns, ciphertextSha256: string | null = bytesDigest(r.ciphertext)): StoredRecord {
  return {
    id: r.id,
    organization_id: r.orgId,
    workspace_id: r.workspaceId,
    installation_id: r.installationId,
    agent_id: r.agentId,
    replica_id: r.replicaId,
    ts: r.ts,
    received_at: r.receivedAt,
    kind: r.kind,
    harness: r.harness,
    action: r.action,
    tool_name: r.toolName,
    tool_server: r.toolServer,
    upstream_identity: r.upstreamIdentity,
    model: r.model,
    task: r.task,
    decision: r.decision,
    reason: r.reason,
    policy_id: r.policyId,
    policy_revision: r.policyRevision,
    shadow_decision: r.shadowDecision,
    shadow_policy_id: r.shadowPolicyId,
    shadow_reason: r.shadowReason,
    user_id: r.userId,
    remote_user_id: r.remoteUserId,
    via_installation: r.viaInstallation,
    ref: r.ref,
    outcome: r.outcome,
    exit_code: r.exitCode,
    args_digest: r.argsDigest,
    digest_key_id: r.digestKeyId,
    recipient_key_ids: r.recipientKeyIds,
    ciphertext_sha256: ciphertextSha256,
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
    cost: r.cost,
    duration_ms: r.durationMs,
    chain_id: r.chainId,
    chain_seq: r.chainSeq,
    chain_prev: r.chainPrev,
    actor_id: r.actorId,
    target: r.target,
    detail: r.detail,
  };
}

export type AuditExportLine = AuditRecordView & { ciphertext_sha256: string | null; columns?: Partial<StoredRecord> };

/** The export line of a row (`email`: the user's, shown in the view, not stored in the row). */
export function exportLine(row: RowColumns & { storeChain: string | null; storeSeq: number | null; storePrev: string | null }, email: string | null): AuditExportLine {
  // Built in place (recordView picks its fields, the ciphertext is not one): copying a row's 47
  // columns twice per line was a fifth of an export's time (issue 30).
  const line = recordView(row, email) as AuditExportLine;
  line.ciphertext_sha256 = bytesDigest(row.ciphertext);
  const stored = storedFromRow(row, line.ciphertext_sha256);
  const shown = storedOfLine(line, shownTime(row.ts, line.ts), shownTime(row.receivedAt, line.received_at));
  let lost: Partial<StoredRecord> | null = null;
  for (const f of STORED_FIELDS) {
    if (!sameJson(stored[f], shown[f])) (lost ??= {} as Record<string, unknown>)[f] = stored[f];
  }
  if (lost) line.columns = lost;
  return line;
}

/**
 * The epoch ms a line's time shows, `iso` being the view's `toISOString()` of the row's `ms`:
 * `ms` itself when it is a whole number (toISOString threw for one out of Date's range), as
 * writing it and parsing it back give it exactly (stored.test.ts); else the text parsed (a
 * fraction written into the store is cut, so the line keeps the column). Parsing two times
 * per line was a tenth of the export's serving cost (issue 30). Pure.
 */
export function shownTime(ms: number, iso: string): number {
  return Number.isInteger(ms) ? ms : Date.parse(iso);
}

/**
 * Whether two values have one JSON text (undefined as null), without writing it for the usual
 * case: the same value, or two different strings (a JSON text per field of every row was most
 * of an export's time, issue 30). Anything else (NaN beside null, -0 beside 0, lists) is
 * compared as JSON text. Pure.
 */
export function sameJson(x: unknown, y: unknown): boolean {
  if (x === y) return true;
  if (typeof x === "string" && typeof y === "string") return false;
  // lists element by element (a row's empty recipient list beside the line's own empty list)
  if (Array.isArray(x) && Array.isArray(y)) return x.length === y.length && x.every((v, i) => sameJson(v, y[i]));
  return JSON.stringify(x ?? null) === JSON.stringify(y ?? null);
}
