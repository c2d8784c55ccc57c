// Verification as one call, for what holds the whole export at once (tests, small tools): the
// checkpoints trusted from a pinned key (checkpoint-trust.ts), then every line walked
// (verifier.ts), the problems of both in one report. `svc audit verify` streams instead.
import type { CheckpointView } from "../audit-chain.ts";
import type { ExportLine } from "../stored-line.ts";
import { type SavedCheckpoint, type Trust, trustCheckpoints } from "./checkpoint-trust.ts";
import { AuditVerifier, type VerifyReport } from "./verifier.ts";

export { AuditVerifier, type Problem, type VerifyReport } from "./verifier.ts";
export { type SavedCheckpoint, type Trust, trustCheckpoints } from "./checkpoint-trust.ts";

export type FullVerification = VerifyReport & { keyChange: Trust["keyChange"]; rotations: Trust["rotations"]; key: string | null };

/** Trusts the checkpoints from `pinned` (default: the key they name, for tests of the records alone), then checks every line. */
export function verifyLines(
  lines: Iterable<ExportLine>,
  list: { public_key: string | null; checkpoints: CheckpointView[] },
  o: { pinned?: string; orgId?: string | null; saved?: SavedCheckpoint | null } = {},
): FullVerification {
  const pinned = o.pinned ?? list.public_key ?? "";
  const trust = trustCheckpoints(list.checkpoints, { pinned, named: list.public_key, orgId: o.orgId ?? null, saved: o.saved ?? null });
  const verifier = new AuditVerifier(trust.trusted);
  for (const l of lines) verifier.add(l);
  const r = verifier.finish();
  const problems = [...trust.problems, ...r.problems];
  const state = problems.length > 0 || trust.keyChange ? "tampered" : trust.trusted ? r.state : "unsigned";
  return { ...r, state, ok: state !== "tampered", problems, problems_total: trust.problems.length + r.problems_total, keyChange: trust.keyChange, rotations: trust.rotations, key: trust.key };
}
