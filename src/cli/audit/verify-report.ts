// What `svc audit verify` prints: one state, each distinct (docs/cli.md "svc audit verify"):
//   verified   exit 0  every record is under a signed checkpoint;
//   unsigned   exit 0  records chained and not yet signed (the count, the next checkpoint);
//   tampered   exit 1  the problems on stdout, the first on stderr, naming the record;
//   (cannot verify, exit 3, and a changed key, exit 4, end the command before a report.)
import { keyFingerprint } from "../../contract/audit-chain.ts";
import type { Problem, VerifyReport } from "../../contract/verify/verifier.ts";
import { note, out, renderTable, shortTime } from "../shared/output.ts";

export const EXIT_TAMPERED = 1;
/** The check could not be made: control plane unreachable, no pinned key, unreadable file. */
export const EXIT_CANNOT_VERIFY = 3;
/** The control plane names a signing key neither pinned nor handed over to by the pinned one. */
export const EXIT_KEY_CHANGED = 4;

export type FullReport = Omit<VerifyReport, "problems"> & {
  problems: Problem[];
  pinned_key: string;
  pinned_fingerprint: string;
  next_checkpoint_at: string | null;
  rotations: { number: number; from: string; to: string }[];
};

export function printProblems(problems: readonly Problem[]): void {
  out(
    renderTable(problems, [
      { header: "PROBLEM", value: (p) => p.kind },
      { header: "RECORD", value: (p) => p.record_id },
      { header: "CHAIN", value: (p) => (p.chain_id ? `${p.chain_id}${p.seq !== null ? ` #${p.seq}` : ""}` : null) },
      { header: "TIME", value: (p) => shortTime(p.ts) },
      { header: "DETAIL", value: (p) => p.detail },
    ]),
  );
}

/** The next step for records not yet signed. */
function unsignedAdvice(nextAt: string | null): string {
  return `${nextAt ? `the next checkpoint is due at ${nextAt}; ` : ""}\`svc audit checkpoints create\` signs them now`;
}

export function printReport(r: FullReport): void {
  for (const rot of r.rotations) note(`The signing key was rotated at checkpoint #${rot.number}: ${keyFingerprint(rot.from)} handed over to ${keyFingerprint(rot.to)} (pinned from now on).`);
  if (r.state === "tampered") return printProblems(r.problems);
  const cp = r.checkpoint;
  if (cp) out(`Verified ${r.covered} records against checkpoint #${cp.number} (${cp.at}), signed by ${cp.public_key} (${keyFingerprint(cp.public_key)}).`);
  if (r.state === "unsigned") {
    if (r.uncovered > 0 || !cp) out(`${r.uncovered} records are chained and not yet signed${cp ? "" : " (no checkpoint yet)"}; ${unsignedAdvice(r.next_checkpoint_at)}.`);
    if (r.awaiting_adoption > 0)
      out(`${r.awaiting_adoption} records stored before the store chains existed are still being adopted into them (in the background); run verify again once adoption is done.`);
  }
  if (r.unchained > 0) note(`${r.unchained} records were not chained by their proxy (written before chaining, or admin events): the control plane's store chains cover them.`);
}
