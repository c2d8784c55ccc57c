// Stanza keys made by the worker seal files age decrypts, each is used once, and no X25519
// work runs on the calling thread while the worker is there: not for the first record after
// a new recipient, not in a burst longer than the pool (sealCounters counts inline keys).
import { afterEach, expect, test } from "bun:test";
import { bech32 } from "@scure/base";
import { Decrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { ageSeal, sealCounters, stanzaKeys } from "./age-seal.ts";
import { sealCallContent } from "./call-content.ts";
import { BATCH, StanzaPool } from "./stanza-pool.ts";

const pools: StanzaPool[] = [];
afterEach(() => {
  for (const p of pools.splice(0)) p.close();
});
const newPool = () => {
  const pool = new StanzaPool();
  pools.push(pool);
  return pool;
};

async function open(file: Uint8Array, identity: string) {
  const d = new Decrypter();
  d.addIdentity(identity);
  return d.decrypt(file, "text");
}

const shareOf = (file: Uint8Array) => /-> X25519 (\S+)/.exec(Buffer.from(file).toString("latin1"))![1]!;

test("the first record after a new recipient waits for the worker, not the event loop; files decrypt; no key is used twice", async () => {
  const identity = await generateX25519Identity();
  const recipient = await identityToRecipient(identity);
  const pool = newPool();
  const inline = sealCounters.inlineStanzaKeys;
  const shares = new Set<string>();
  for (let i = 0; i < 20; i++) {
    const file = ageSeal([recipient], `record ${i}`, await stanzaKeys([recipient], pool));
    expect(await open(file, identity)).toBe(`record ${i}`);
    shares.add(shareOf(file));
  }
  expect(shares.size).toBe(20);
  expect(sealCounters.inlineStanzaKeys).toBe(inline);
});

test("a burst longer than the pool, two recipients: every record is sealed with the worker's keys, none inline", async () => {
  const [a, b] = await Promise.all([generateX25519Identity(), generateX25519Identity()]);
  const [ra, rb] = await Promise.all([identityToRecipient(a), identityToRecipient(b)]);
  const pool = newPool();
  const inline = sealCounters.inlineStanzaKeys;
  const digestKey = { id: "dk_1", key: new Uint8Array(32).fill(7) };
  const recipients = [
    { key_id: "k_a", recipient: ra, kind: "customer" as const },
    { key_id: "k_b", recipient: rb, kind: "customer" as const },
  ];
  const n = BATCH + 150;
  const sealed = await Promise.all(Array.from({ length: n }, async (_, i) => sealCallContent(digestKey, recipients, { i }, null, pool)));
  expect(sealCounters.inlineStanzaKeys).toBe(inline);
  const files = sealed.map((s) => Buffer.from(s.ciphertext!, "base64"));
  expect(new Set(files.map(shareOf)).size).toBe(n);
  for (const i of [0, n - 1]) {
    expect(JSON.parse(await open(files[i]!, a))).toEqual({ arguments: { i }, payload: null });
    expect(JSON.parse(await open(files[i]!, b))).toEqual({ arguments: { i }, payload: null });
  }
});

test("bad recipients fail as inline sealing does; without a worker (closed) sealing still works", async () => {
  const pool = newPool();
  await expect(stanzaKeys(["age1pq1notx25519"], pool)).rejects.toThrow(/not an age X25519 recipient/);
  const zero = bech32.encode("age", bech32.toWords(new Uint8Array(32)));
  await expect(stanzaKeys([zero], pool)).rejects.toThrow(/X25519 key agreement failed/);
  const identity = await generateX25519Identity();
  const recipient = await identityToRecipient(identity);
  pool.close();
  const inline = sealCounters.inlineStanzaKeys;
  expect(await open(ageSeal([recipient], "late", await stanzaKeys([recipient], pool)), identity)).toBe("late");
  expect(sealCounters.inlineStanzaKeys).toBe(inline + 1);
});
