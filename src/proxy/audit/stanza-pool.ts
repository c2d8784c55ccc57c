// Sealing's costly part, off the event loop. Each age X25519 stanza needs a fresh ephemeral
// key and one key agreement with the recipient (two scalar multiplications, most of a
// record's sealing time). Neither depends on the record, so a worker thread makes them ahead
// of time, per recipient, and sealing (age-seal.ts) takes one — each is used exactly once —
// leaving only the symmetric part (wrap the file key, MAC, ChaCha20-Poly1305) on the event
// loop. When none is ready (the first record after a new recipient, a long burst) the record
// waits for the worker: a small first batch answers within a few key agreements, and the
// event loop keeps serving meanwhile. Only when the worker is gone (it failed, or the pool is
// closed) is a stanza made inline, as a last resort (counted in sealCounters).
// The worker's source is inline (a Blob URL) so the compiled binary needs no extra entry point.
import { x25519RecipientKey } from "../../contract/age-recipient.ts";
import { inlineStanzaKey, type StanzaKey, type StanzaKeySource } from "./age-seal.ts";

/** Ask for more when fewer than this many are ready for a recipient. */
export const LOW_WATER = 64;
/** How many the worker makes per request. */
export const BATCH = 256;
/** The first request for a recipient with records waiting: small, so they wait little. */
export const FIRST_BATCH = 8;
/** Recipients kept at once (a bundle has a few); the least recently used is dropped. */
const MAX_RECIPIENTS = 16;

const WORKER_SOURCE = `
import { createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync } from "node:crypto";
const SPKI = Buffer.from("302a300506032b656e032100", "hex");
self.onmessage = (e) => {
  const { recipient, raw, count } = e.data;
  const pub = createPublicKey({ key: Buffer.concat([SPKI, Buffer.from(raw)]), format: "der", type: "spki" });
  const shares = new Uint8Array(32 * count);
  const keys = new Uint8Array(32 * count);
  let n = 0;
  for (let i = 0; i < count; i++) {
    const eph = generateKeyPairSync("x25519");
    const share = eph.publicKey.export({ format: "der", type: "spki" }).subarray(SPKI.length);
    let shared;
    try { shared = diffieHellman({ privateKey: eph.privateKey, publicKey: pub }); } catch { break; }
    if (shared.every((b) => b === 0)) break;
    shares.set(share, 32 * n);
    keys.set(new Uint8Array(hkdfSync("sha256", shared, Buffer.concat([share, Buffer.from(raw)]), "age-encryption.org/v1/X25519", 32)), 32 * n);
    n++;
  }
  postMessage({ recipient, n, shares, keys }, [shares.buffer, keys.buffer]);
};
`;

type Made = { recipient: string; n: number; shares: Uint8Array; keys: Uint8Array };

type Waiter = { resolve: (k: StanzaKey) => void; reject: (e: unknown) => void };

export class StanzaPool implements StanzaKeySource {
  private readonly ready = new Map<string, StanzaKey[]>();
  /** Requests in flight to the worker, per recipient. */
  private readonly asked = new Map<string, number>();
  private readonly waiting = new Map<string, Waiter[]>();
  private worker: Worker | null;

  constructor() {
    const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
    this.worker = new Worker(url);
    (this.worker as Worker & { unref?: () => void }).unref?.();
    this.worker.onmessage = (e: MessageEvent<Made>) => this.received(e.data);
    this.worker.onerror = () => this.gone();
  }

  /** A stanza key for this recipient, made by the worker: a ready one, or the next one made. */
  async next(recipient: string): Promise<StanzaKey> {
    const key = this.take(recipient);
    if (key) return Promise.resolve(key);
    if (!this.worker) return settle(recipient);
    return new Promise<StanzaKey>((resolve, reject) => {
      const list = this.waiting.get(recipient) ?? [];
      list.push({ resolve, reject });
      this.waiting.set(recipient, list);
    });
  }

  /** A stanza key for this recipient, removed from the pool; null when none is ready. */
  take(recipient: string): StanzaKey | null {
    let list = this.ready.get(recipient);
    if (list) {
      // most recently used last, so the least recently used is dropped first
      this.ready.delete(recipient);
      this.ready.set(recipient, list);
    } else {
      list = [];
      this.ready.set(recipient, list);
      if (this.ready.size > MAX_RECIPIENTS) this.ready.delete(this.ready.keys().next().value!);
    }
    const key = list.pop() ?? null;
    if (list.length < LOW_WATER) this.ask(recipient, key === null);
    return key;
  }

  /** How many are ready for a recipient (tests, status). */
  readyFor(recipient: string): number {
    return this.ready.get(recipient)?.length ?? 0;
  }

  close(): void {
    this.gone();
  }

  /** No worker any more: records waiting are sealed inline, and so are later ones. */
  private gone(): void {
    // An error in the worker may leave it running but useless: it is ended either way.
    this.worker?.terminate();
    this.worker = null;
    this.ready.clear();
    this.asked.clear();
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const [recipient, list] of waiting) for (const w of list) settle(recipient).then(w.resolve, w.reject);
  }

  private ask(recipient: string, urgent: boolean): void {
    if (!this.worker || this.asked.get(recipient)) return;
    const raw = x25519RecipientKey(recipient);
    if (!raw) return; // not an X25519 recipient: sealing refuses it before asking
    const counts = urgent ? [FIRST_BATCH, BATCH] : [BATCH];
    this.asked.set(recipient, counts.length);
    for (const count of counts) this.worker.postMessage({ recipient, raw, count });
  }

  private received(m: Made): void {
    this.asked.set(m.recipient, (this.asked.get(m.recipient) ?? 1) - 1);
    const keys: StanzaKey[] = [];
    for (let i = 0; i < m.n; i++) keys.push({ share: m.shares.subarray(32 * i, 32 * i + 32), wrapKey: m.keys.subarray(32 * i, 32 * i + 32) });
    const waiting = this.waiting.get(m.recipient) ?? [];
    while (waiting.length > 0 && keys.length > 0) waiting.shift()!.resolve(keys.pop()!);
    if (waiting.length === 0) this.waiting.delete(m.recipient);
    else if (m.n === 0) {
      // The worker could make none (a low-order recipient): sealing inline says why.
      this.waiting.delete(m.recipient);
      for (const w of waiting) settle(m.recipient).then(w.resolve, w.reject);
    } else this.ask(m.recipient, true);
    const list = this.ready.get(m.recipient);
    if (!list) return; // dropped meanwhile (an old bundle's recipient)
    list.push(...keys);
  }
}

/** A stanza key made inline (no worker), as a settled promise: resolved, or rejected with why not. */
async function settle(recipient: string): Promise<StanzaKey> {
  return inlineStanzaKey(recipient);
}
