import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bech32 } from "@scure/base";
import { Decrypter, generateHybridIdentity, generateX25519Identity, identityToRecipient } from "age-encryption";
import { chacha20poly1305 } from "@noble/ciphers/chacha.js";
import { ageSeal, chachaPolySeal, x25519RecipientBytes } from "./age-seal.ts";

async function keypair() {
  const identity = await generateX25519Identity();
  return { identity, recipient: await identityToRecipient(identity) };
}

async function open(file: Uint8Array, identity: string): Promise<Uint8Array> {
  const d = new Decrypter();
  d.addIdentity(identity);
  return d.decrypt(file);
}

const text = (b: Uint8Array) => Buffer.from(b).toString("utf8");

/** Decrypts with the real `age` CLI (Debian package `age`), identity file from `age-keygen`. */
function ageCli(file: Uint8Array, dir: string): { ok: boolean; out: Buffer; err: string } {
  const r = Bun.spawnSync(["age", "-d", "-i", join(dir, "key.txt")], { stdin: file, stdout: "pipe", stderr: "pipe" });
  return { ok: r.exitCode === 0, out: Buffer.from(r.stdout), err: r.stderr.toString() };
}

function cliKey(dir: string): string {
  const r = Bun.spawnSync(["age-keygen", "-o", join(dir, "key.txt")], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`age-keygen failed: ${r.stderr}`);
  const m = /Public key: (age1\w+)/.exec(r.stderr.toString() + r.stdout.toString());
  if (!m) throw new Error("age-keygen printed no public key");
  return m[1]!;
}

describe("chachaPolySeal", () => {
  test("matches RFC 8439 ChaCha20-Poly1305 (noble's AEAD) for empty, short, block-sized and multi-block inputs", () => {
    const key = new Uint8Array(32).map((_, i) => i * 7 + 1);
    const nonce = new Uint8Array(12).map((_, i) => (i === 11 ? 1 : i));
    for (const size of [0, 1, 15, 16, 17, 64, 100, 65536]) {
      const plain = new Uint8Array(size).map((_, i) => (i * 13) & 0xff);
      expect(Buffer.from(chachaPolySeal(key, nonce, plain)).equals(Buffer.from(chacha20poly1305(key, nonce).encrypt(plain)))).toBe(true);
    }
  });
});

describe("ageSeal", () => {
  test("one recipient: the age-encryption Decrypter opens it; the header is age v1 with one X25519 stanza", async () => {
    const a = await keypair();
    const file = ageSeal([a.recipient], '{"arguments":{"a":1},"payload":null}');
    expect(text(await open(file, a.identity))).toBe('{"arguments":{"a":1},"payload":null}');
    const head = Buffer.from(file).toString("latin1").split("\n");
    expect(head[0]).toBe("age-encryption.org/v1");
    expect(head[1]).toMatch(/^-> X25519 [A-Za-z0-9+/]{43}$/);
    expect(head[2]).toMatch(/^[A-Za-z0-9+/]{43}$/); // 32-byte wrapped key, one short line
    expect(head[3]).toMatch(/^--- [A-Za-z0-9+/]{43}$/);
  });

  test("two recipients: each identity alone decrypts, a stranger cannot; fresh ephemeral key per stanza", async () => {
    const a = await keypair();
    const b = await keypair();
    const c = await keypair();
    const file = ageSeal([a.recipient, b.recipient], new Uint8Array([1, 2, 3]));
    expect([...(await open(file, a.identity))]).toEqual([1, 2, 3]);
    expect([...(await open(file, b.identity))]).toEqual([1, 2, 3]);
    await expect(open(file, c.identity)).rejects.toThrow();
    const stanzas = Buffer.from(file)
      .toString("latin1")
      .split("\n")
      .filter((l) => l.startsWith("-> X25519 "));
    expect(stanzas).toHaveLength(2);
    expect(stanzas[0]).not.toBe(stanzas[1]);
    // Two seals of the same content differ (random file key, nonce, ephemeral keys).
    expect(Buffer.from(ageSeal([a.recipient], "x")).equals(Buffer.from(ageSeal([a.recipient], "x")))).toBe(false);
  });

  test("empty plaintext round-trips", async () => {
    const a = await keypair();
    expect((await open(ageSeal([a.recipient], ""), a.identity)).length).toBe(0);
  });

  test("multi-chunk payloads (> 64 KiB, and exactly 64 KiB) decrypt", async () => {
    const a = await keypair();
    for (const size of [64 * 1024, 64 * 1024 + 1, 200_000]) {
      const plain = new Uint8Array(size);
      for (let i = 0; i < size; i++) plain[i] = (i * 31 + 7) & 0xff;
      const out = await open(ageSeal([a.recipient], plain), a.identity);
      expect(out.length).toBe(size);
      expect(Buffer.from(out).equals(Buffer.from(plain))).toBe(true);
    }
  });

  test("the age CLI decrypts it (1 and 2 recipients, multi-chunk), with an age-keygen identity", async () => {
    const dir = mkdtempSync(join(tmpdir(), "age-seal-"));
    try {
      const cli = cliKey(dir);
      const other = await keypair();
      const one = ageCli(ageSeal([cli], "hello age"), dir);
      expect(one.err).toBe("");
      expect(one.out.toString()).toBe("hello age");
      const two = ageCli(ageSeal([other.recipient, cli], "to both"), dir);
      expect(two.ok).toBe(true);
      expect(two.out.toString()).toBe("to both");
      const big = Buffer.alloc(150_000, "abcdefgh");
      const many = ageCli(ageSeal([cli], big), dir);
      expect(many.ok).toBe(true);
      expect(many.out.equals(big)).toBe(true);
      // and an identity made by the package, written to a file for the CLI
      writeFileSync(join(dir, "key.txt"), `${other.identity}\n`);
      expect(ageCli(ageSeal([other.recipient], "pkg key"), dir).out.toString()).toBe("pkg key");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a tampered header fails to decrypt (package and CLI)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "age-seal-"));
    try {
      const cli = cliKey(dir);
      const file = ageSeal([cli], "secret");
      const s = Buffer.from(file).toString("latin1");
      // Flip one character of the ephemeral share in the stanza line.
      const at = s.indexOf("-> X25519 ") + 12;
      const tampered = Buffer.from(file);
      tampered[at] = tampered[at] === 0x41 ? 0x42 : 0x41;
      expect(ageCli(tampered, dir).ok).toBe(false);
      // Flip a byte of the MAC.
      const macAt = s.indexOf("--- ") + 6;
      const badMac = Buffer.from(file);
      badMac[macAt] = badMac[macAt] === 0x41 ? 0x42 : 0x41;
      expect(ageCli(badMac, dir).ok).toBe(false);
      const a = await keypair();
      const f2 = Buffer.from(ageSeal([a.recipient], "secret"));
      const m2 = Buffer.from(f2).toString("latin1").indexOf("--- ") - 2; // last char of the wrapped key line
      f2[m2] = f2[m2] === 0x41 ? 0x42 : 0x41;
      await expect(open(f2, a.identity)).rejects.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("recipients that are not X25519 are refused", async () => {
    const pq = await identityToRecipient(await generateHybridIdentity()); // post-quantum hybrid "age1pq1…"
    const a = await keypair();
    expect(() => ageSeal([a.recipient, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk"], "x")).toThrow(/not an age X25519 recipient/);
    expect(() => ageSeal(["age1notbech32"], "x")).toThrow(/not an age X25519 recipient/);
    expect(() => ageSeal([bech32.encode("age1yubikey", bech32.toWords(new Uint8Array(33)))], "x")).toThrow(/not an age X25519 recipient/);
    expect(() => ageSeal([bech32.encode("age", bech32.toWords(new Uint8Array(31)))], "x")).toThrow(/not an age X25519 recipient/);
    expect(() => ageSeal([], "x")).toThrow(/at least one recipient/);
    expect(() => ageSeal([pq], "x")).toThrow(/not an age X25519 recipient/);
    expect(x25519RecipientBytes(a.recipient)).toHaveLength(32);
  });

  test("a low-order recipient key (all-zero shared secret) is refused", () => {
    const zero = bech32.encode("age", bech32.toWords(new Uint8Array(32)));
    expect(() => ageSeal([zero], "x")).toThrow(/X25519 key agreement failed/);
  });
});
