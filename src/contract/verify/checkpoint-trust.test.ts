// Which checkpoints a verifier trusts from its pinned key: the lineage of keys (a rotation hands
// over in a checkpoint signed by the old key), a checkpoint re-signed with another key, one
// removed or changed after this verifier trusted it, and a key the control plane names that no
// hand-over leads to (a key change: the caller stops).
import { describe, expect, test } from "bun:test";
import { generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import { type CheckpointBody, type CheckpointView, bodyHash, publicKeyText } from "../audit-chain.ts";
import { trustCheckpoints } from "./checkpoint-trust.ts";

type Key = { pub: string; priv: KeyObject };
const key = (): Key => {
  const p = generateKeyPairSync("ed25519");
  return { pub: publicKeyText(p.publicKey), priv: p.privateKey };
};

/** Checkpoints #1…, each signed by the key given for it; `handover[i]` names the next key on #i+1. */
function checkpoints(signers: Key[], handover: Record<number, string> = {}): CheckpointView[] {
  const out: CheckpointView[] = [];
  signers.forEach((k, i) => {
    const body: CheckpointBody = {
      v: 2,
      organization_id: "org_1",
      number: i + 1,
      at: `2026-01-0${i + 1}T00:00:00.000Z`,
      prev: i ? bodyHash(out[i - 1]!.body) : null,
      public_key: k.pub,
      heads: [{ chain_id: "store", installation_id: "controlplane", replica_id: null, seq: i + 1, hash: "h" }],
      adoption: "complete",
      ...(handover[i + 1] ? { next_key: handover[i + 1] } : {}),
    };
    const text = JSON.stringify(body);
    out.push({ id: `ckp_${i}`, number: i + 1, at: body.at, body: text, signature: sign(null, Buffer.from(text), k.priv).toString("base64") });
  });
  return out;
}

const trust = (list: CheckpointView[], pinned: string, named: string | null, saved = null as Parameters<typeof trustCheckpoints>[1]["saved"]) =>
  trustCheckpoints(list, { pinned, named, orgId: "org_1", saved });

describe("trustCheckpoints", () => {
  test("all signed by the pinned key: the latest is trusted", () => {
    const k = key();
    const t = trust(checkpoints([k, k, k]), k.pub, k.pub);
    expect(t).toMatchObject({ problems: [], keyChange: null, key: k.pub });
    expect(t.trusted?.number).toBe(3);
  });

  test("a rotation: a verifier holding the old pin follows the hand-over and gets the new key to pin", () => {
    const [a, b] = [key(), key()];
    const list = checkpoints([a, a, b, b], { 2: b.pub });
    const t = trust(list, a.pub, b.pub);
    expect(t).toMatchObject({ problems: [], keyChange: null, key: b.pub, rotations: [{ number: 2, from: a.pub, to: b.pub }] });
    expect(t.trusted?.number).toBe(4);
    // pinned to the new key already: the older checkpoints are covered by the hash chain
    expect(trust(list, b.pub, b.pub).problems).toEqual([]);
    // handed over, not yet used: fine too
    expect(trust(checkpoints([a, a], { 2: b.pub }), a.pub, b.pub)).toMatchObject({ problems: [], keyChange: null, key: b.pub });
  });

  test("a checkpoint re-signed with another key (the key swapped in the store) is not trusted; the ones before are", () => {
    const [k, attacker] = [key(), key()];
    const list = checkpoints([k, k, attacker]);
    const t = trust(list, k.pub, k.pub);
    expect(t.trusted?.number).toBe(2);
    expect(t.problems.map((p) => p.detail)).toEqual([
      `checkpoint #3 is signed by ${attacker.pub}, but checkpoint #2 is signed by ${k.pub} and hands over to no other key: a key that was not rotated in`,
    ]);
    // every checkpoint re-signed: none is trusted, and the control plane (which holds the pinned key) did not sign them
    const all = trust(checkpoints([attacker, attacker]), k.pub, k.pub);
    expect(all.trusted).toBeNull();
    expect(all.problems[0]!.detail).toContain(`no checkpoint is signed by the pinned key ${k.pub}`);
  });

  test("a body edited after signing, or a checkpoint removed, is named", () => {
    const k = key();
    const list = checkpoints([k, k, k]);
    const edited = [list[0]!, { ...list[1]!, body: list[1]!.body.replace('"seq":2', '"seq":9') }, list[2]!];
    expect(trust(edited, k.pub, k.pub).problems[0]!.detail).toBe("checkpoint #2 does not carry a valid signature by " + k.pub);
    expect(trust([list[0]!, list[2]!], k.pub, k.pub).problems[0]!.detail).toBe("checkpoint #3 is in place 2: a checkpoint was removed or inserted");
  });

  test("the control plane naming a key that no hand-over leads to is a key change", () => {
    const [k, other] = [key(), key()];
    expect(trust(checkpoints([k, k]), k.pub, other.pub).keyChange).toEqual({ pinned: k.pub, named: other.pub, latest: k.pub });
    expect(trust([], k.pub, other.pub).keyChange).toMatchObject({ pinned: k.pub, named: other.pub });
    // the whole history re-signed with the new key as well
    expect(trust(checkpoints([other, other]), k.pub, other.pub).keyChange).toMatchObject({ named: other.pub });
  });

  test("a checkpoint this verifier trusted before: gone or changed is tampering, and its saved copy stays the anchor", () => {
    const [k, attacker] = [key(), key()];
    const genuine = checkpoints([k, k]);
    const saved = { number: 2, body: genuine[1]!.body, signature: genuine[1]!.signature, verified_at: "2026-01-03T00:00:00.000Z" };
    expect(trust(genuine, k.pub, k.pub, saved).problems).toEqual([]);
    expect(trust(genuine.slice(0, 1), k.pub, k.pub, saved).problems.map((p) => p.detail)).toEqual(["checkpoint #2, which this verifier trusted on 2026-01-03T00:00:00.000Z, is gone in the store"]);
    const forged = [genuine[0]!, ...checkpoints([k, attacker]).slice(1)];
    const t = trust(forged, k.pub, k.pub, saved);
    expect(t.trusted?.heads).toEqual(JSON.parse(genuine[1]!.body).heads);
    expect(t.problems.length).toBe(2);
  });
});
