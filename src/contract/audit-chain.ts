// The hash chain of audit records (issue 15, tamper evidence). Pure: the proxy stamps each
// record it writes with (chain_id, chain_seq, chain_prev) before spooling it; the control plane
// recomputes the hash at ingest to check continuity and to sign chain heads in checkpoints;
// `svc audit verify` recomputes it from an export. All three hash the same CHAIN FORM: a
// fixed list of fields in a fixed order, JSON-encoded as an array, so fields added to records
// later (and the control plane's own columns) never change the hash of an existing record.
// The ciphertext enters as its SHA-256 (an export carries the digest, never the ciphertext).
// A decision record's `outcome` and `exit_code` are left out: the control plane fills them in
// from the outcome record (which is chained itself, with them).
import { createHash, createPublicKey, type KeyObject, verify } from "node:crypto";

export const CHAIN_VERSION = 1;

/** What the hash covers, in the shape both an AuditRecord and an export line have. */
export type ChainInput = {
  id: string;
  ts: string;
  kind: string;
  organization_id: string;
  workspace_id: string;
  installation_id: string;
  agent_id: string;
  replica_id?: string | null | undefined;
  action: string;
  tool_name: string | null;
  model?: string | null | undefined;
  decision: string;
  reason: string;
  policy_id?: string | null | undefined;
  policy_revision: number;
  subject: { user_id: string | null; remote_user_id: string | null; via_installation: boolean };
  ref?: string | null | undefined;
  outcome?: string | null | undefined;
  exit_code?: number | null | undefined;
  args_digest: string | null;
  digest_key_id: string | null;
  recipient_key_ids: readonly string[];
  prompt_tokens?: number | null | undefined;
  completion_tokens?: number | null | undefined;
  cost?: number | null | undefined;
  duration_ms?: number | null | undefined;
  /** The shadow policy's decision (issue 17). */
  shadow?: { decision: string; policy_id: string | null; reason: string } | null | undefined;
  chain_id?: string | null | undefined;
  chain_seq?: number | null | undefined;
  chain_prev?: string | null | undefined;
};

/**
 * The MCP server a tool name belongs to: the part before its first dot (`kb.lookup` → `kb`).
 * A record's `tool_server` (issue 13) is not in the chain form; it must equal this for the
 * record's chained `tool_name`, which the control plane's ingest and `svc audit verify` check,
 * so the field is as tamper-evident as the name it is derived from.
 */
export function toolServerOf(toolName: string | null | undefined): string | null {
  const dot = toolName ? toolName.indexOf(".") : -1;
  return dot > 0 ? toolName!.slice(0, dot) : null;
}

const n = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

/** SHA-256 hex of base64 ciphertext, or null when there is none. */
export function ciphertextDigest(base64: string | null | undefined): string | null {
  if (!base64) return null;
  return Bun.SHA256.hash(Buffer.from(base64, "base64"), "hex");
}

/** The chain form's JSON text. `ciphertextSha256` is the stored ciphertext's digest. */
export function chainText(r: ChainInput, ciphertextSha256: string | null): string {
  const outcome = r.kind === "outcome";
  return JSON.stringify([
    CHAIN_VERSION,
    r.id,
    new Date(Date.parse(r.ts)).toISOString(),
    r.kind,
    r.organization_id,
    r.workspace_id,
    r.installation_id,
    r.agent_id,
    n(r.replica_id),
    r.action,
    r.tool_name,
    n(r.model),
    r.decision,
    r.reason,
    n(r.policy_id),
    r.policy_revision,
    r.subject.user_id,
    r.subject.remote_user_id,
    r.subject.via_installation,
    n(r.ref),
    outcome ? n(r.outcome) : null,
    outcome ? n(r.exit_code) : null,
    r.args_digest,
    r.digest_key_id,
    [...r.recipient_key_ids],
    n(r.prompt_tokens),
    n(r.completion_tokens),
    n(r.cost),
    n(r.duration_ms),
    ciphertextSha256,
    r.shadow ? [r.shadow.decision, r.shadow.policy_id, r.shadow.reason] : null,
    n(r.chain_id),
    n(r.chain_seq),
    n(r.chain_prev),
  ]);
}

/** The record's hash: SHA-256 hex of its chain form. */
export function recordHash(r: ChainInput, ciphertextSha256: string | null): string {
  // Bun's native SHA-256: the same digest as node:crypto's createHash, without its stream object.
  return Bun.SHA256.hash(chainText(r, ciphertextSha256), "hex");
}

// Checkpoints (signed by the control plane, checked by `svc audit verify`): the body is the
// exact JSON text signed; `prev` is the SHA-256 of the previous checkpoint's body.
export const CHECKPOINT_VERSION = 2;
export type CheckpointHead = { chain_id: string; installation_id: string; replica_id: string | null; seq: number; hash: string };
/** Where retention cut a chain: records below `seq` were deleted; `prev` is the hash of the last one deleted. */
export type CheckpointFloor = { chain_id: string; seq: number; prev: string };
/** Where retention deleted rows of a store chain (contract/store-chain.ts): `from`–`to`, the first named `prev`, the last hashed to `hash`. */
export type CheckpointGap = { chain_id: string; from: number; to: number; prev: string | null; hash: string };
/**
 * `floors` is present only once retention deleted records (older checkpoints never have it).
 * Since the store chains (version 2): `gaps` once retention deleted store-chain rows;
 * `adoption`, whether rows stored before the store chains may still be awaiting their link
 * ("pending") or every row must have one ("complete"); `next_key` on the checkpoint that hands
 * the signing over to a new key (key rotation): it is signed by the old key, the ones after by
 * the new one.
 */
export type CheckpointBody = {
  v: number;
  organization_id: string;
  number: number;
  at: string;
  prev: string | null;
  public_key: string;
  heads: CheckpointHead[];
  floors?: CheckpointFloor[];
  gaps?: CheckpointGap[];
  adoption?: "pending" | "complete";
  next_key?: string;
};
/** A checkpoint as the admin API answers it (admin-audit.ts). */
export type { Checkpoint as CheckpointView } from "./admin-audit.ts";

export const bodyHash = (body: string): string => createHash("sha256").update(body).digest("hex");

/** `ed25519:<base64 raw 32 bytes>` of a public key. */
export function publicKeyText(key: KeyObject): string {
  const jwk = key.export({ format: "jwk" }) as { x: string };
  return `ed25519:${Buffer.from(jwk.x, "base64url").toString("base64")}`;
}

export function publicKeyOf(text: string): KeyObject {
  if (!/^ed25519:[A-Za-z0-9+/]{43}=$/.test(text)) throw new Error(`not an ed25519 public key (ed25519:<base64>): ${text.slice(0, 60)}`);
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(text.slice(8), "base64").toString("base64url") }, format: "jwk" });
}

/** `SHA256:<base64, no padding>` of the raw key, as ssh prints key fingerprints: what people compare. */
export function keyFingerprint(publicKey: string): string {
  const raw = Buffer.from(publicKey.replace(/^ed25519:/, ""), "base64");
  return `SHA256:${createHash("sha256").update(raw).digest("base64").replace(/=+$/, "")}`;
}

/** Whether `signature` (base64) is the key's Ed25519 signature of `body`. */
export function checkpointSignatureValid(body: string, signature: string, publicKey: string): boolean {
  try {
    return verify(null, Buffer.from(body), publicKeyOf(publicKey), Buffer.from(signature, "base64"));
  } catch {
    return false;
  }
}
