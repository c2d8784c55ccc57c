// Stanza keys made by the worker seal files age decrypts, each is used once, and sealing
// without one ready still works (inline).
import { afterEach, expect, test } from "bun:test";
import { Decrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { ageSeal } from "./age-seal.ts";
import { BATCH, StanzaPool } from "./stanza-pool.ts";

const pools: StanzaPool[] = [];
afterEach(() => {
  for (const p of pools.splice(0)) p.close();
});

async function open(file: Uint8Array, identity: string) {
  const d = new Decrypter();
  d.addIdentity(identity);
  return d.decrypt(file, "text");
}

const shareOf = (file: Uint8Array) => /-> X25519 (\S+)/.exec(Buffer.from(file).toString("latin1"))![1]!;

test("the worker fills the pool; files sealed with its keys decrypt; no key is used twice", async () => {
  const identity = await generateX25519Identity();
  const recipient = await identityToRecipient(identity);
  const pool = new StanzaPool();
  pools.push(pool);
  expect(pool.take(recipient)).toBeNull(); // nothing yet: the first record seals inline and asks the worker
  for (let i = 0; i < 500 && pool.readyFor(recipient) === 0; i++) await Bun.sleep(10);
  expect(pool.readyFor(recipient)).toBe(BATCH);
  const shares = new Set<string>();
  for (let i = 0; i < 20; i++) {
    const file = ageSeal([recipient], `record ${i}`, pool);
    expect(await open(file, identity)).toBe(`record ${i}`);
    shares.add(shareOf(file));
  }
  expect(shares.size).toBe(20);
  expect(pool.readyFor(recipient)).toBe(BATCH - 20);
});

test("two recipients, one with keys ready and one without: both decrypt", async () => {
  const [a, b] = await Promise.all([generateX25519Identity(), generateX25519Identity()]);
  const [ra, rb] = await Promise.all([identityToRecipient(a), identityToRecipient(b)]);
  const pool = new StanzaPool();
  pools.push(pool);
  pool.take(ra);
  for (let i = 0; i < 500 && pool.readyFor(ra) === 0; i++) await Bun.sleep(10);
  const file = ageSeal([ra, rb], "both", pool);
  expect(await open(file, a)).toBe("both");
  expect(await open(file, b)).toBe("both");
});

test("a recipient that is not X25519 is still refused with a pool", () => {
  const pool = new StanzaPool();
  pools.push(pool);
  expect(() => ageSeal(["age1pq1notx25519"], "x", pool)).toThrow(/not an age X25519 recipient/);
});
