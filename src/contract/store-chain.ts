// The store chains (issue 27, tamper evidence that needs no trust in the store). The proxy's
// chain (audit-chain.ts) covers the fields a proxy writes; the control plane adds columns of its
// own (received_at, tool_server, task, the admin trail's actor_id, target and detail). So the
// control plane links every row it stores, at write time and inside the writing transaction,
// into one of its organization's store chains, with a form that covers EVERY stored column:
//   - "store":   runtime records, in commit order (ingest; the order SIEM sinks stream in);
//   - "admin":   admin events, in commit order (admin transactions are SERIALIZABLE on
//                PostgreSQL: a chain of their own keeps them from contending with ingest);
//   - "adopted": rows stored before the store chains existed, adopted by a background backfill.
// Each link is (chain, seq, prev); its hash covers the row's digest, so the checkpoint that
// signs a store chain's head covers every field of every row below it. A decision row's
// `outcome` and `exit_code` are left out: ingest fills them in later from the outcome record,
// and `svc audit verify` checks them against that record instead. The ciphertext enters as
// its SHA-256 (an export carries the digest, never the ciphertext). Pure.
import { type ChainInput, recordHash } from "./audit-chain.ts";

export const STORE_CHAIN_VERSION = 1;
export const STORE_CHAINS = ["store", "admin", "adopted"] as const;
export type StoreChainId = (typeof STORE_CHAINS)[number];

/** A row's place in its store chain. */
export type StoreLink = { chain: string; seq: number; prev: string | null };

/** Every stored column of an audit record (ciphertext as its digest; times in epoch ms). */
export type StoredRecord = {
  id: string;
  organization_id: string;
  workspace_id: string;
  installation_id: string;
  agent_id: string;
  replica_id: string | null;
  ts: number;
  received_at: number;
  kind: string;
  harness: string;
  action: string;
  tool_name: string | null;
  tool_server: string | null;
  /** Canonical JSON of the upstream identity (issue 32), or null. */
  upstream_identity: string | null;
  model: string | null;
  task: string | null;
  decision: string;
  reason: string;
  policy_id: string | null;
  policy_revision: number;
  shadow_decision: string | null;
  shadow_policy_id: string | null;
  shadow_reason: string | null;
  user_id: string | null;
  remote_user_id: string | null;
  via_installation: boolean;
  ref: string | null;
  outcome: string | null;
  exit_code: number | null;
  args_digest: string | null;
  digest_key_id: string | null;
  recipient_key_ids: string[];
  ciphertext_sha256: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cost: number | null;
  duration_ms: number | null;
  chain_id: string | null;
  chain_seq: number | null;
  chain_prev: string | null;
  actor_id: string | null;
  target: string | null;
  detail: string | null;
};

/** The form's fields, in order. A column added to audit_records must be added here (store-chain.test.ts holds it). */
export const STORED_FIELDS = [
  "id",
  "organization_id",
  "workspace_id",
  "installation_id",
  "agent_id",
  "replica_id",
  "ts",
  "received_at",
  "kind",
  "harness",
  "action",
  "tool_name",
  "tool_server",
  "upstream_identity",
  "model",
  "task",
  "decision",
  "reason",
  "policy_id",
  "policy_revision",
  "shadow_decision",
  "shadow_policy_id",
  "shadow_reason",
  "user_id",
  "remote_user_id",
  "via_installation",
  "ref",
  "outcome",
  "exit_code",
  "args_digest",
  "digest_key_id",
  "recipient_key_ids",
  "ciphertext_sha256",
  "prompt_tokens",
  "completion_tokens",
  "cost",
  "duration_ms",
  "chain_id",
  "chain_seq",
  "chain_prev",
  "actor_id",
  "target",
  "detail",
] as const satisfies readonly (keyof StoredRecord)[];

/**
 * The form in two parts. Most columns are the fields a proxy writes: they enter through the
 * proxy's own chain form (audit-chain.ts `recordHash`, which leaves a decision's outcome and
 * exit code out), so ingest, which computes that hash anyway for chain continuity, pays for it
 * once. The rest are the control plane's own columns and the shadow columns as stored
 * (STORE_EXTRA_FIELDS), which the proxy form does not hold exactly.
 */
export const STORE_EXTRA_FIELDS = [
  "received_at",
  "harness",
  "task",
  "tool_server",
  "shadow_decision",
  "shadow_policy_id",
  "shadow_reason",
  "actor_id",
  "target",
  "detail",
] as const satisfies readonly (keyof StoredRecord)[];

/** The stored record as the proxy's chain form takes it. */
export function chainInputOf(r: StoredRecord): ChainInput {
  return {
    id: r.id,
    ts: Number.isFinite(r.ts) && Math.abs(r.ts) <= 8.64e15 ? new Date(r.ts).toISOString() : "1970-01-01T00:00:00.000Z",
    kind: r.kind,
    organization_id: r.organization_id,
    workspace_id: r.workspace_id,
    installation_id: r.installation_id,
    agent_id: r.agent_id,
    replica_id: r.replica_id,
    action: r.action,
    tool_name: r.tool_name,
    model: r.model,
    decision: r.decision,
    reason: r.reason,
    policy_id: r.policy_id,
    policy_revision: r.policy_revision,
    subject: { user_id: r.user_id, remote_user_id: r.remote_user_id, via_installation: r.via_installation },
    ref: r.ref,
    outcome: r.outcome,
    exit_code: r.exit_code,
    args_digest: r.args_digest,
    digest_key_id: r.digest_key_id,
    recipient_key_ids: r.recipient_key_ids,
    prompt_tokens: r.prompt_tokens,
    completion_tokens: r.completion_tokens,
    cost: r.cost,
    duration_ms: r.duration_ms,
    shadow: r.shadow_decision !== null ? { decision: r.shadow_decision, policy_id: r.shadow_policy_id, reason: r.shadow_reason ?? "" } : null,
    chain_id: r.chain_id,
    chain_seq: r.chain_seq,
    chain_prev: r.chain_prev,
  };
}

/** The row's digest from its proxy-form hash and its extra columns (what ingest calls, having the first already). */
export function storeDigestOf(proxyFormHash: string, extras: Pick<StoredRecord, (typeof STORE_EXTRA_FIELDS)[number]> & { upstream_identity?: string | null }): string {
  const form: unknown[] = [STORE_CHAIN_VERSION, proxyFormHash];
  for (const f of STORE_EXTRA_FIELDS) form.push(extras[f] ?? null);
  // Issue 32's column, covered only where set: the digests of rows stored before it stay as they were.
  if (extras.upstream_identity) form.push(extras.upstream_identity);
  return Bun.SHA256.hash(JSON.stringify(form), "hex");
}

/** The row's digest: what its link hash covers. A record whose `ts` is no time (a row someone broke) hashes as the epoch. */
export function storeDigest(r: StoredRecord): string {
  return storeDigestOf(recordHash(chainInputOf(r), r.ciphertext_sha256), r);
}

/** A link's hash: what the next row of the chain names as `prev`, and what a checkpoint signs as the head. */
export function storeLinkHash(link: StoreLink, digest: string): string {
  return Bun.SHA256.hash(JSON.stringify([STORE_CHAIN_VERSION, link.chain, link.seq, link.prev, digest]), "hex");
}

/** The next links of a chain whose head is (seq, hash), for rows with these digests, in order. */
export function extendChain(chain: string, head: { seq: number; hash: string | null }, digests: readonly string[]): { links: StoreLink[]; head: { seq: number; hash: string | null } } {
  const links: StoreLink[] = [];
  let seq = head.seq;
  let hash = head.hash;
  for (const d of digests) {
    const link = { chain, seq: ++seq, prev: hash };
    links.push(link);
    hash = storeLinkHash(link, d);
  }
  return { links, head: { seq, hash } };
}
