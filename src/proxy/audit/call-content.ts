// What an audit record keeps of a call's content (spec §2 "Audit record"): always the args
// digest and its key id; the age ciphertext of canonical {arguments, payload} to every active
// recipient when there is at least one (age v1, sealed with native primitives by
// age-seal.ts); otherwise nothing more (digest-only). The plain arguments exist only in
// memory for the length of this call.
import type { BundleRecipient } from "../../contract/bundle.ts";
import { ageSeal, type StanzaKeySource, stanzaKeys } from "./age-seal.ts";
import { canonicalJson, digestOfCanonical } from "./canonical.ts";

export type DigestKey = { id: string; key: Uint8Array };

export type SealedContent = {
  args_digest: string;
  digest_key_id: string;
  recipient_key_ids: string[];
  /** base64 of the binary age v1 file; null in digest-only mode. */
  ciphertext: string | null;
};

export async function sealCallContent(
  digestKey: DigestKey,
  recipients: readonly BundleRecipient[],
  args: unknown,
  payload: string | null | undefined,
  ready?: StanzaKeySource,
): Promise<SealedContent> {
  // Canonicalized once: the digest is over this text, and the sealed content embeds it
  // (canonical JSON of {arguments, payload}: the keys are already in order).
  const canonicalArgs = canonicalJson(args);
  const sealed: SealedContent = {
    args_digest: digestOfCanonical(digestKey.key, canonicalArgs),
    digest_key_id: digestKey.id,
    recipient_key_ids: [],
    ciphertext: null,
  };
  if (recipients.length === 0) return sealed;
  const names = recipients.map((r) => r.recipient);
  // The X25519 work is done by the source's worker; only the symmetric part runs here.
  const keys = ready ? await stanzaKeys(names, ready) : undefined;
  const file = ageSeal(names, `{"arguments":${canonicalArgs},"payload":${canonicalJson(payload ?? null)}}`, keys);
  sealed.ciphertext = Buffer.from(file.buffer, file.byteOffset, file.byteLength).toString("base64");
  sealed.recipient_key_ids = recipients.map((r) => r.key_id);
  return sealed;
}
