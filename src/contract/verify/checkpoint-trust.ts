// Which signed checkpoints a verifier may trust (pure). The trust anchor is a key pinned
// outside the control plane's store (the CLI's known keys, cli/audit/pins.ts; `--public-key`),
// never the key the store names. The checkpoints must be numbered 1, 2, …, each naming the
// hash of the one before, each carrying a valid signature by the key its body names; that key
// may change only where the checkpoint before hands the signing over to it (`next_key`,
// signed by the old key: a rotation). The pinned key must be one of that lineage; everything
// up to the first checkpoint that breaks these rules is trusted (a later checkpoint names the
// hash of every earlier one), the rest is not. A checkpoint this verifier trusted before (its
// saved copy) must still be there, unchanged; if the store's later ones are forged, the saved
// one is the anchor. The control plane naming a key that no hand-over leads to is a key change
// (someone replaced the key, or the control plane was reinstalled): the caller stops there.
import { type CheckpointBody, type CheckpointView, bodyHash, checkpointSignatureValid } from "../audit-chain.ts";
import type { Problem } from "./chain-walk.ts";

/** A checkpoint a verifier trusted before, as it keeps it. */
export type SavedCheckpoint = { number: number; body: string; signature: string; verified_at: string };

export type Trust = {
  /** The latest checkpoint trusted, or null (none yet, or none trustworthy). */
  trusted: CheckpointBody | null;
  /** The key the lineage ends with: what to pin from now on. */
  key: string | null;
  /** Checkpoint numbers where the signing passed to a new key (rotations) in the trusted part. */
  rotations: { number: number; from: string; to: string }[];
  /** Set when the control plane names a key that neither is pinned nor was handed over to. */
  keyChange: { pinned: string; named: string; latest: string | null } | null;
  problems: Problem[];
};

const problem = (detail: string, seq: number | null = null): Problem => ({ kind: "checkpoint", record_id: null, chain_id: null, seq, ts: null, detail });

function parse(cp: CheckpointView): CheckpointBody | null {
  try {
    return JSON.parse(cp.body) as CheckpointBody;
  } catch {
    return null;
  }
}

/** The checkpoints that follow the rules, from #1, and the problem where they stop. */
function validPrefix(list: readonly CheckpointView[], orgId: string | null): { bodies: CheckpointBody[]; problem: Problem | null } {
  const bodies: CheckpointBody[] = [];
  for (const [i, cp] of list.entries()) {
    const n = i + 1;
    const body = parse(cp);
    if (!body) return { bodies, problem: problem(`checkpoint #${cp.number} is not JSON`, n) };
    if (body.number !== n || cp.number !== n) return { bodies, problem: problem(`checkpoint #${cp.number} is in place ${n}: a checkpoint was removed or inserted`, n) };
    if (body.prev !== (i === 0 ? null : bodyHash(list[i - 1]!.body))) return { bodies, problem: problem(`checkpoint #${n} does not name the hash of checkpoint #${n - 1}`, n) };
    if (orgId && body.organization_id !== orgId) return { bodies, problem: problem(`checkpoint #${n} is another organization's (${body.organization_id})`, n) };
    const before = bodies[i - 1];
    const expected = before ? (before.next_key ?? before.public_key) : body.public_key;
    if (body.public_key !== expected)
      return {
        bodies,
        problem: problem(
          `checkpoint #${n} is signed by ${body.public_key}, but checkpoint #${n - 1} is signed by ${before!.public_key} and hands over to no other key: a key that was not rotated in`,
          n,
        ),
      };
    if (!checkpointSignatureValid(cp.body, cp.signature, body.public_key)) return { bodies, problem: problem(`checkpoint #${n} does not carry a valid signature by ${body.public_key}`, n) };
    bodies.push(body);
  }
  return { bodies, problem: null };
}

export function trustCheckpoints(list: readonly CheckpointView[], o: { pinned: string; named: string | null; orgId: string | null; saved: SavedCheckpoint | null }): Trust {
  const problems: Problem[] = [];
  const { bodies, problem: broken } = validPrefix(list, o.orgId);
  if (broken) problems.push(broken);
  if (broken && list.length > bodies.length + 1) problems.push(problem(`checkpoints #${bodies.length + 2}–#${list.length} come after it and are not trusted either`));
  const lineage: string[] = [];
  const rotations: Trust["rotations"] = [];
  for (const b of bodies) {
    if (lineage[lineage.length - 1] !== b.public_key) lineage.push(b.public_key);
    if (b.next_key && b.next_key !== b.public_key) {
      lineage.push(b.next_key);
      rotations.push({ number: b.number, from: b.public_key, to: b.next_key });
    }
  }
  const latest = lineage[lineage.length - 1] ?? null;
  let trusted: CheckpointBody | null = bodies[bodies.length - 1] ?? null;
  let key: string | null = latest ?? o.pinned;
  if (bodies.length > 0 && !lineage.includes(o.pinned)) {
    if (o.named !== null && o.named !== o.pinned) return { trusted: null, key: null, rotations, keyChange: { pinned: o.pinned, named: o.named, latest }, problems };
    problems.push(problem(`no checkpoint is signed by the pinned key ${o.pinned}, which the control plane holds: the checkpoints in its store were replaced`));
    trusted = null;
    key = o.pinned;
  } else if (o.named !== null && o.named !== (bodies.length > 0 ? latest : o.pinned)) {
    return { trusted, key, rotations, keyChange: { pinned: o.pinned, named: o.named, latest }, problems };
  }
  if (o.saved) {
    const there = list[o.saved.number - 1];
    if (!there || bodyHash(there.body) !== bodyHash(o.saved.body)) {
      problems.push(problem(`checkpoint #${o.saved.number}, which this verifier trusted on ${o.saved.verified_at}, is ${there ? "changed" : "gone"} in the store`, o.saved.number));
    }
    if (!trusted || trusted.number < o.saved.number) trusted = JSON.parse(o.saved.body) as CheckpointBody;
  }
  return { trusted, key, rotations, keyChange: null, problems };
}
