// The seal of a verification run's outcome: an Ed25519 signature, by the organization's
// checkpoint-signing key, of the finished run's row. The key's private half is stored only
// wrapped by the KMS, so whoever can write the database cannot make one: a row they insert
// ("the roll-ups are equal"), or a finding they edit, has no seal that verifies, and
// rollup-trust.ts then distrusts the roll-ups. The same outcome and seal go into the admin trail
// (verify-store.ts), whose chains and checkpoints make removing the run evident.
import { type KeyObject, sign, verify } from "node:crypto";

/** The admin event of a finished run (verify-trail.ts). */
export const VERIFICATION_ACTION = "audit_verification.run";

/** A finished run as stored in audit_verifications: every column the seal covers. */
export type VerificationOutcome = {
  id: string;
  orgId: string;
  startedAt: number;
  finishedAt: number | null;
  state: string;
  records: number;
  checkpoint: number | null;
  problems: number;
  detail: string | null;
  rollupMismatches: number;
  rollupDetail: string | null;
};

const hex = (text: string | null) => (text === null ? "-" : Bun.SHA256.hash(text, "hex"));

/** The exact text signed (pure): one field a line; the free texts as their SHA-256. */
export function verificationBody(o: VerificationOutcome): string {
  return [
    "svc audit verification v1",
    `org ${o.orgId}`,
    `run ${o.id}`,
    `started ${Number(o.startedAt)}`,
    `finished ${o.finishedAt === null ? "-" : Number(o.finishedAt)}`,
    `state ${o.state}`,
    `records ${o.records}`,
    `checkpoint ${o.checkpoint ?? "-"}`,
    `problems ${o.problems}`,
    `detail ${hex(o.detail)}`,
    `rollup_mismatches ${o.rollupMismatches}`,
    `rollup_detail ${hex(o.rollupDetail)}`,
  ].join("\n");
}

/** The base64 signature of the outcome. */
export function sealVerification(o: VerificationOutcome, privateKey: KeyObject): string {
  return sign(null, Buffer.from(verificationBody(o)), privateKey).toString("base64");
}

/** Seals checked already, by row text: budgets ask on every sum, the row changes once a day. */
const checked = new Map<string, boolean>();

/** Whether `signature` is one of `keys`' over the outcome; false without a signature or a key. */
export function sealHolds(o: VerificationOutcome & { signature: string | null }, keys: readonly KeyObject[]): boolean {
  if (!o.signature || keys.length === 0) return false;
  const body = verificationBody(o);
  const memo = `${o.signature}\n${body}\n${keys.length}`;
  const known = checked.get(memo);
  if (known !== undefined) return known;
  const signature = Buffer.from(o.signature, "base64");
  const holds = keys.some((k) => verify(null, Buffer.from(body), k, signature));
  if (checked.size > 1000) checked.clear();
  checked.set(memo, holds);
  return holds;
}

/** A stored row of audit_verifications: its times may come back as text (PostgreSQL's bigint). */
type StoredRun = Omit<VerificationOutcome, "startedAt" | "finishedAt"> & { startedAt: number | string; finishedAt: number | string | null; signature: string | null };

/** The row as the outcome its seal covers, with whether the seal is one of `keys`'. */
export function sealedRun<R extends StoredRun>(row: R, keys: readonly KeyObject[]): R & { startedAt: number; finishedAt: number | null; sealed: boolean } {
  const run = { ...row, startedAt: Number(row.startedAt), finishedAt: row.finishedAt === null ? null : Number(row.finishedAt) };
  return { ...run, sealed: sealHolds(run, keys) };
}
