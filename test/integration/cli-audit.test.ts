// svc audit keys create|list|disable and svc audit decrypt against a real control plane, with
// the real `age` CLI on both sides: a record encrypted by `age -r` decrypts with svc, and the
// ciphertext svc fetches decrypts with `age -d -i <identity made by svc audit keys create>`.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Encrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { type ControlPlaneProcess, cleanup, startControlPlane, svcCommand } from "../support/controlplane-process.ts";
import { openStore, tables } from "../../src/controlplane/db/index.ts";
import { api, bootstrapRuntime, cliEnv, createAgent, createInstallation, filesHolding, org, runtimeRecord, svc, tempHomes } from "./cli-support.ts";

const hasAge = Bun.which("age") !== null;
// Interoperability with the real age CLI is a requirement, not an extra: never skip it.
if (!hasAge) throw new Error("the age command-line tool is required for these tests; scripts/setup.sh installs it (apt-get install age)");
let cp: ControlPlaneProcess;
let runtime: Awaited<ReturnType<typeof bootstrapRuntime>>;
let installationId: string;
const { home, removeHomes } = tempHomes();

beforeAll(async () => {
  cp = await startControlPlane();
  const agent = await createAgent(cp);
  installationId = (await createInstallation(cp, agent)).id;
  runtime = await bootstrapRuntime(cp, installationId);
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
  removeHomes();
});

/** Stores a record as the proxy's shipper would (runtime API), with the given age ciphertext. */
async function storeRecord(ciphertext: Uint8Array | null, keyIds: string[]): Promise<string> {
  const sealed = ciphertext ? { args_digest: null, digest_key_id: null, ciphertext: Buffer.from(ciphertext).toString("base64") } : {};
  const record = runtimeRecord(runtime, { recipient_key_ids: keyIds, ...sealed });
  const r = await api(cp, "POST", "/runtime/audit-records", { records: [record] }, runtime.token);
  if (r.status !== 200) throw new Error(`storing the record failed: ${r.status} ${JSON.stringify(r.json)}`);
  return record.id;
}

function identityFile(h: string) {
  return join(h, ".config", "svc", "audit-identity.txt");
}

async function createKey(h: string, extra: string[] = []) {
  const r = await svc(cp, ["audit", "keys", "create", "--json", ...extra], { home: h });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as { id: string; public_key: string; status: string; identity_file: string };
}

test("keys create writes an age-keygen style identity (0600) and uploads only the public key", async () => {
  const h = home();
  const r = await svc(cp, ["audit", "keys", "create", "--name", "security"], { home: h });
  expect(r.code).toBe(0);
  const file = identityFile(h);
  expect(statSync(file).mode & 0o777).toBe(0o600);
  const text = readFileSync(file, "utf8");
  expect(text).toMatch(/^# created: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n# public key: (age1[0-9a-z]+)\n(AGE-SECRET-KEY-1[0-9A-Z]+)\n$/);
  const publicKey = /# public key: (age1[0-9a-z]+)/.exec(text)![1]!;
  const secret = /(AGE-SECRET-KEY-1[0-9A-Z]+)/.exec(text)![1]!;
  expect(await identityToRecipient(secret)).toBe(publicKey);
  expect(r.stdout + r.stderr).not.toContain("AGE-SECRET-KEY");
  expect(r.stdout).toContain(publicKey);

  const keys = (await api(cp, "GET", org(cp, "/audit-encryption-keys"))).json.keys as { name: string; public_key: string; status: string }[];
  expect(keys.find((k) => k.public_key === publicKey)).toMatchObject({ name: "security", status: "active" });
  // The control plane's files never held the private key.
  expect(filesHolding(cp.dataDir, secret)).toEqual([]);
  if (hasAge) {
    const y = Bun.spawnSync(["age-keygen", "-y", file]);
    expect(y.stdout.toString().trim()).toBe(publicKey);
  }
});

test("the default identity: 0600 file in a 0700 directory (tightened if it exists), under any umask; never printed", async () => {
  const h = home();
  mkdirSync(join(h, ".config", "svc"), { recursive: true, mode: 0o755 });
  chmodSync(join(h, ".config", "svc"), 0o755);
  // umask 000: the modes must come from svc, not from a friendly umask.
  const proc = Bun.spawn(["sh", "-c", 'umask 000; exec "$@"', "sh", ...svcCommand(), "audit", "keys", "create", "--json"], { env: cliEnv(cp, h), stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect(stderr).toBe("");
  expect(code).toBe(0);
  expect(statSync(join(h, ".config", "svc")).mode & 0o777).toBe(0o700);
  expect(statSync(identityFile(h)).mode & 0o777).toBe(0o600);
  expect(JSON.parse(stdout).identity_file).toBe(identityFile(h));
  expect(stdout).not.toContain("AGE-SECRET-KEY");
  expect(readFileSync(identityFile(h), "utf8")).toContain("AGE-SECRET-KEY-1");

  // A fresh $HOME: ~/.config/svc is made 0700.
  const fresh = home();
  const r = await svc(cp, ["audit", "keys", "create"], { home: fresh });
  expect(r.code).toBe(0);
  expect(statSync(join(fresh, ".config", "svc")).mode & 0o777).toBe(0o700);
  expect(r.stdout + r.stderr).not.toContain("AGE-SECRET-KEY");
});

test("a dangling symlink at the identity path is not written through, and no key is uploaded", async () => {
  const h = home();
  mkdirSync(join(h, ".config", "svc"), { recursive: true, mode: 0o700 });
  const target = join(h, "elsewhere.txt");
  symlinkSync(target, identityFile(h));
  const count = (await api(cp, "GET", org(cp, "/audit-encryption-keys"))).json.keys.length;
  const r = await svc(cp, ["audit", "keys", "create"], { home: h });
  expect(r.code).toBe(1);
  expect(r.stderr).toBe(`svc audit keys create: ${identityFile(h)} already exists and is never overwritten; pass --identity-file <new path>, or move the old identity away if no record needs it\n`);
  expect(existsSync(target)).toBe(false);
  expect((await api(cp, "GET", org(cp, "/audit-encryption-keys"))).json.keys.length).toBe(count);
});

test("--identity-file=~/… is under $HOME, not a directory named ~", async () => {
  const h = home();
  const key = await createKey(h, ["--identity-file=~/keys/team.txt"]);
  expect(key.identity_file).toBe(join(h, "keys", "team.txt"));
  expect(statSync(join(h, "keys", "team.txt")).mode & 0o777).toBe(0o600);
  expect(statSync(join(h, "keys")).mode & 0o777).toBe(0o700);
});

test("an existing identity file is never overwritten and no key is uploaded", async () => {
  const h = home();
  const first = await createKey(h);
  const before = readFileSync(identityFile(h), "utf8");
  const count = (await api(cp, "GET", org(cp, "/audit-encryption-keys"))).json.keys.length;
  const r = await svc(cp, ["audit", "keys", "create"], { home: h });
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("already exists and is never overwritten");
  expect(readFileSync(identityFile(h), "utf8")).toBe(before);
  expect((await api(cp, "GET", org(cp, "/audit-encryption-keys"))).json.keys.length).toBe(count);
  expect(first.status).toBe("active");
});

test("--identity-file writes elsewhere; list and disable (permanent)", async () => {
  const dir = home();
  const path = join(dir, "nested", "team.txt");
  const key = await createKey(home(), ["--identity-file", path, "--name", "team"]);
  expect(key.identity_file).toBe(path);
  expect(statSync(path).mode & 0o777).toBe(0o600);

  const list = await svc(cp, ["audit", "keys", "list"]);
  expect(list.code).toBe(0);
  expect(list.stdout).toMatch(/^ID\s+NAME\s+KIND\s+STATUS\s+PUBLIC KEY\s+CREATED\s+DISABLED/);
  expect(list.stdout.split("\n").find((l) => l.startsWith(key.id))).toMatch(/team\s+customer\s+active\s+age1/);

  const d = await svc(cp, ["audit", "keys", "disable", key.id]);
  expect(d.code).toBe(0);
  expect(d.stdout).toContain(`Disabled audit key ${key.id}`);
  const json = JSON.parse((await svc(cp, ["audit", "keys", "list", "--json"])).stdout);
  expect(json.keys.find((k: { id: string }) => k.id === key.id).status).toBe("disabled");
  const again = await svc(cp, ["audit", "keys", "disable", key.id]);
  expect(again.code).toBe(1);
  expect(again.stderr.trim()).toMatch(/^svc audit keys disable: .+ \(key_disabled\)$/);
});

test("a record encrypted by `age -r` decrypts with svc audit decrypt (--out 0600, --stdout)", async () => {
  const h = home();
  const key = await createKey(h);
  const plaintext = JSON.stringify({ arguments: { account: "ACME", amount: 42 }, payload: "update ünïcode" });
  const enc = Bun.spawnSync(["age", "-r", key.public_key], { stdin: new TextEncoder().encode(plaintext) });
  expect(enc.exitCode).toBe(0);
  const rec = await storeRecord(new Uint8Array(enc.stdout), [key.id]);

  const out = join(h, "plain.json");
  const r = await svc(cp, ["audit", "decrypt", "--record", rec, "--identity", identityFile(h), "--out", out], { home: h });
  expect(r.stderr).toContain(`to ${out} (mode 0600)`);
  expect(r.code).toBe(0);
  expect(r.stdout).toBe("");
  expect(readFileSync(out, "utf8")).toBe(plaintext);
  expect(statSync(out).mode & 0o777).toBe(0o600);

  const s = await svc(cp, ["audit", "decrypt", "--record", rec, "--identity", identityFile(h), "--stdout"], { home: h });
  expect(s.code).toBe(0);
  expect(s.stdout).toBe(plaintext);

  // --out never replaces an existing file, the identity file least of all.
  const identityBefore = readFileSync(identityFile(h), "utf8");
  const again = await svc(cp, ["audit", "decrypt", "--record", rec, "--identity", identityFile(h), "--out", identityFile(h)], { home: h });
  expect(again.code).toBe(1);
  expect(again.stderr).toContain("already exists");
  expect(readFileSync(identityFile(h), "utf8")).toBe(identityBefore);
});

test("the ciphertext svc fetches decrypts with `age -d -i` and the identity svc made", async () => {
  const h = home();
  const key = await createKey(h);
  const e = new Encrypter();
  e.addRecipient(key.public_key);
  e.addRecipient(await identityToRecipient(await generateX25519Identity())); // a second recipient, as with escrow
  const plaintext = '{"arguments":{"q":"x"},"payload":null}';
  const rec = await storeRecord(await e.encrypt(plaintext), [key.id, "key_other"]);

  const fetched = await fetch(`${cp.url}/api/v1${org(cp, `/audit-records/${rec}/ciphertext`)}`, { headers: { authorization: `Bearer ${cp.token}` } });
  expect(fetched.status).toBe(200);
  const ctFile = join(h, "rec.age");
  writeFileSync(ctFile, new Uint8Array(await fetched.arrayBuffer()));
  const d = Bun.spawnSync(["age", "-d", "-i", identityFile(h), ctFile]);
  expect(d.stderr.toString()).toBe("");
  expect(d.stdout.toString()).toBe(plaintext);
  // …and svc agrees.
  const s = await svc(cp, ["audit", "decrypt", "--record", rec, "--identity", identityFile(h), "--stdout"], { home: h });
  expect(s.stdout).toBe(plaintext);
});

test("decrypt with an identity that is not a recipient fails with a clear message", async () => {
  const h = home();
  const key = await createKey(h);
  const e = new Encrypter();
  e.addRecipient(key.public_key);
  const rec = await storeRecord(await e.encrypt("{}"), [key.id]);
  const other = home();
  await createKey(other);
  const out = join(other, "x.json");
  const r = await svc(cp, ["audit", "decrypt", "--record", rec, "--identity", identityFile(other), "--out", out], { home: other });
  expect(r.code).toBe(1);
  expect(r.stderr.trim()).toMatch(/^svc audit decrypt: record rec_\w+ cannot be decrypted with .+\(decrypt_failed\)$/);
  expect(existsSync(out)).toBe(false);
});

test("decrypt of a digest-only record names the control plane's code", async () => {
  const h = home();
  await createKey(h);
  const rec = await storeRecord(null, []);
  const r = await svc(cp, ["audit", "decrypt", "--record", rec, "--identity", identityFile(h), "--stdout"], { home: h });
  expect(r.code).toBe(1);
  expect(r.stdout).toBe("");
  expect(r.stderr.trim()).toMatch(/^svc audit decrypt: .+ \(not_found\)$/);
});

test("decrypt with a file that is not an identity is refused before any call", async () => {
  const h = home();
  const bad = join(h, "bad.txt");
  writeFileSync(bad, "# comment\nage1notasecret\n");
  const r = await svc(null, ["audit", "decrypt", "--record", "rec_1", "--identity", bad, "--stdout"], { home: h });
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("is not an age identity file: line 2");
});

test("decrypt with neither --out nor --stdout exits 2 and writes nothing", async () => {
  const h = home();
  await createKey(h);
  const r = await svc(cp, ["audit", "decrypt", "--record", "rec_1", "--identity", identityFile(h)], { home: h });
  expect(r.code).toBe(2);
  expect(r.stdout).toBe("");
});

test("keys list shows the escrow key once escrow is enabled, marked as escrow (issue 15)", async () => {
  const h = home();
  await createKey(h);
  const on = await api(cp, "PATCH", org(cp, "/settings"), { escrow_enabled: true });
  expect(on.status).toBe(200);
  const r = await svc(cp, ["audit", "keys", "list"], { home: h });
  expect(r.code).toBe(0);
  const row = r.stdout.split("\n").find((l) => l.includes(on.json.escrow_recipient))!;
  expect(row).toMatch(/^key_\S+\s+escrow \(service-held, break-glass\)\s+escrow\s+active\s+age1/);
  const j = JSON.parse((await svc(cp, ["audit", "keys", "list", "--json"], { home: h })).stdout);
  expect(j.keys.filter((k: { kind: string }) => k.kind === "escrow")).toHaveLength(1);
  // it is switched in the settings, never disabled as a key: the CLI says so with the API's code
  const escrowId = j.keys.find((k: { kind: string }) => k.kind === "escrow").id;
  const d = await svc(cp, ["audit", "keys", "disable", escrowId], { home: h });
  expect(d.code).toBe(1);
  expect(d.stderr).toContain(`svc audit keys disable: ${escrowId} is the escrow key: it is switched with escrow in the organization settings`);
  expect(d.stderr.trim()).toEndWith("(escrow_key_not_disableable)");
});

test("a low-order key stored before registration refused them is disabled at control-plane start; keys list and the log say why (issue 14)", async () => {
  const own = await startControlPlane();
  try {
    const lowOrder = "age1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq5cu47z"; // the all-zero point
    // Written straight into the store, as an older control plane accepted it.
    const store = openStore(own.database);
    await store.db.insert(tables(store.db).auditKeys).values({ id: "key_OLDLOWORDER", orgId: own.orgId, name: "old-broken", publicKey: lowOrder, status: "active", createdAt: Date.now() });
    await store.close();
    await own.restart();
    const h = home();
    const r = await svc(own, ["audit", "keys", "list"], { home: h });
    expect(r.code).toBe(0);
    const row = r.stdout.split("\n").find((l) => l.startsWith("key_OLDLOWORDER"))!;
    expect(row).toMatch(/old-broken\s+customer\s+disabled\s+age1q+5cu47z/);
    expect(row).toContain('disabled by the service: public key "age1qqqqqqqq…" is a low-order X25519 point');
    const j = JSON.parse((await svc(own, ["audit", "keys", "list", "--json"], { home: h })).stdout);
    expect(j.keys[0]).toMatchObject({ id: "key_OLDLOWORDER", status: "disabled", disabled_reason: expect.stringContaining("low-order") });
    expect(own.logs()).toContain("key_OLDLOWORDER");
  } finally {
    await own.stop();
    cleanup(own.dataDir);
  }
});
