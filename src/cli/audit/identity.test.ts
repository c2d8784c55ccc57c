import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Encrypter, armor } from "age-encryption";
import { isX25519Recipient } from "../../contract/age-recipient.ts";
import { decryptAgeFile, formatIdentityFile, generateAuditIdentity, parseIdentityFile, writeNewPrivateFile } from "./identity.ts";

const dirs: string[] = [];
function dir(): string {
  const d = mkdtempSync(join(tmpdir(), "svc-age-"));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const hasAge = Bun.which("age") !== null && Bun.which("age-keygen") !== null;
// Interoperability with the real age CLI is a requirement, not an extra: never skip it.
if (!hasAge) throw new Error("the age command-line tool is required for these tests; scripts/setup.sh installs it (apt-get install age)");

test("the identity file has age-keygen's format", async () => {
  const id = await generateAuditIdentity();
  expect(isX25519Recipient(id.recipient)).toBe(true);
  const text = formatIdentityFile(id, new Date("2026-03-04T05:06:07.890Z"));
  expect(text).toBe(`# created: 2026-03-04T05:06:07Z\n# public key: ${id.recipient}\n${id.identity}\n`);
  expect(text).toMatch(/^# created: .*\n# public key: age1[0-9a-z]+\nAGE-SECRET-KEY-1[0-9A-Z]+\n$/);
});

test("identity files are parsed like age does; bad lines are named", () => {
  expect(parseIdentityFile("# c\n\nAGE-SECRET-KEY-1ABC\r\n")).toEqual({ ok: true, identities: ["AGE-SECRET-KEY-1ABC"] });
  expect(parseIdentityFile("# only comments\n")).toEqual({ ok: false, error: "it holds no AGE-SECRET-KEY-1… line" });
  const bad = parseIdentityFile("# c\nage1abc\n");
  expect(bad.ok).toBe(false);
  expect(!bad.ok && bad.error).toContain("line 2");
});

test("the identity file is created 0600 and never overwritten", () => {
  const d = dir();
  const path = join(d, "sub", "id.txt");
  expect(writeNewPrivateFile(path, "first\n")).toBe(true);
  expect(statSync(path).mode & 0o777).toBe(0o600);
  expect(statSync(join(d, "sub")).mode & 0o777).toBe(0o700);
  expect(writeNewPrivateFile(path, "second\n")).toBe(false);
  expect(readFileSync(path, "utf8")).toBe("first\n");
});

test("private output files are new files with mode 0600; an existing file is never replaced", () => {
  const path = join(dir(), "out.json");
  expect(writeNewPrivateFile(path, new TextEncoder().encode("new"))).toBe(true);
  expect(statSync(path).mode & 0o777).toBe(0o600);
  expect(readFileSync(path, "utf8")).toBe("new");
  const existing = join(dir(), "identity.txt");
  writeFileSync(existing, "AGE-SECRET-KEY-1...", { mode: 0o600 });
  expect(writeNewPrivateFile(existing, new TextEncoder().encode("plaintext"))).toBe(false);
  expect(readFileSync(existing, "utf8")).toBe("AGE-SECRET-KEY-1...");
});

test("decrypts binary and armored age files; a wrong identity fails", async () => {
  const a = await generateAuditIdentity();
  const b = await generateAuditIdentity();
  const e = new Encrypter();
  e.addRecipient(a.recipient);
  const ct = await e.encrypt('{"arguments":{"q":1}}');
  expect(new TextDecoder().decode(await decryptAgeFile(ct, [a.identity]))).toBe('{"arguments":{"q":1}}');
  expect(new TextDecoder().decode(await decryptAgeFile(new TextEncoder().encode(armor.encode(ct)), [b.identity, a.identity]))).toBe('{"arguments":{"q":1}}');
  await expect(decryptAgeFile(ct, [b.identity])).rejects.toThrow();
});

test("the age CLI decrypts with the identity file svc writes", async () => {
  const d = dir();
  const id = await generateAuditIdentity();
  const idFile = join(d, "identity.txt");
  writeNewPrivateFile(idFile, formatIdentityFile(id, new Date()));
  const e = new Encrypter();
  e.addRecipient(id.recipient);
  writeFileSync(join(d, "ct.age"), await e.encrypt("secret payload"));
  const r = Bun.spawnSync(["age", "-d", "-i", idFile, join(d, "ct.age")]);
  expect(r.stderr.toString()).toBe("");
  expect(r.stdout.toString()).toBe("secret payload");
});

test("svc decrypts what the age CLI encrypts to an age-keygen identity", async () => {
  const d = dir();
  const idFile = join(d, "keygen.txt");
  expect(Bun.spawnSync(["age-keygen", "-o", idFile]).exitCode).toBe(0);
  const parsed = parseIdentityFile(readFileSync(idFile, "utf8"));
  expect(parsed.ok).toBe(true);
  const recipient = Bun.spawnSync(["age-keygen", "-y", idFile]).stdout.toString().trim();
  const enc = Bun.spawnSync(["age", "-r", recipient], { stdin: new TextEncoder().encode("from age") });
  expect(enc.exitCode).toBe(0);
  const pt = await decryptAgeFile(new Uint8Array(enc.stdout), parsed.ok ? parsed.identities : []);
  expect(new TextDecoder().decode(pt)).toBe("from age");
});
