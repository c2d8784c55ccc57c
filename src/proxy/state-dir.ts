// What the proxy keeps in its state directory besides the bundle: the replica id (generated
// once, sent as x-svc-replica) and the last bootstrap answer (the digest key and ids), so a
// restart while the control plane is down can keep deciding and auditing on the last good
// bundle. Files are 0600 in a 0700 directory; the digest key is a secret and never logged.
// The front end runs as the same UID and can read and write these files
// (docs/frontend-boundary.md), so what the control plane sent is sealed under a key derived from
// the runtime token, which the front end never gets (writeSealed below).
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto";
import { join } from "node:path";
import { matches } from "./schema-check.ts";
import { newId } from "../contract/ids.ts";
import { BootstrapResponse } from "../contract/runtime-api.ts";
import { fsyncDir, writeFileDurably } from "./durable-file.ts";

export const REPLICA_FILE = "replica-id";
export const BOOTSTRAP_FILE = "bootstrap.json";
const REPLICA_RE = /^rep_[0-9A-Z]{26}$/;

export function prepareStateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!statSync(dir).isDirectory()) throw new Error(`${dir} is not a directory`);
  accessSync(dir, constants.W_OK);
}

export function loadOrCreateReplicaId(dir: string): string {
  const path = join(dir, REPLICA_FILE);
  if (existsSync(path)) {
    const id = readFileSync(path, "utf8").trim();
    if (REPLICA_RE.test(id)) return id;
  }
  const id = newId("replica");
  writeFileDurably(path, `${id}\n`, 0o600);
  return id;
}

/** Ties persisted state to the token that fetched it: another token starts from nothing. */
export function tokenFingerprint(token: string): string {
  return createHash("sha256").update(token).digest("hex").slice(0, 32);
}

/**
 * A file the control plane's answers are kept in, sealed (AES-256-GCM) under a key derived from
 * the runtime token, its name bound in as associated data. The front end (same UID) can read and
 * write the state directory, but without the token it can neither read a sealed file (the digest
 * key) nor forge one the proxy accepts (a permissive last good bundle, with the ETag the control
 * plane would answer 304 to). A file of another token, an unsealed one (written before issue 27)
 * or an altered one reads as absent: the proxy then starts from the control plane.
 */
type Sealed = { v: 2; token_fingerprint: string; sealed: string };

function sealingKey(token: string, file: string): { key: Buffer; aad: Buffer } {
  const info = `svc proxy state v2: ${file}`;
  return { key: Buffer.from(hkdfSync("sha256", token, "svc-proxy-state", info, 32)), aad: Buffer.from(info) };
}

export function writeSealed(dir: string, file: string, token: string, value: unknown): void {
  const { key, aad } = sealingKey(token, file);
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", key, iv).setAAD(aad);
  const body = Buffer.concat([c.update(JSON.stringify(value), "utf8"), c.final()]);
  const stored: Sealed = { v: 2, token_fingerprint: tokenFingerprint(token), sealed: Buffer.concat([iv, body, c.getAuthTag()]).toString("base64") };
  writeFileDurably(join(dir, file), JSON.stringify(stored), 0o600);
}

/** The value sealed in `file` under this token; null when absent, of another token, unsealed or altered. */
export function readSealed(dir: string, file: string, token: string): unknown {
  try {
    const stored = JSON.parse(readFileSync(join(dir, file), "utf8")) as Partial<Sealed> | null;
    if (stored?.v !== 2 || stored.token_fingerprint !== tokenFingerprint(token) || typeof stored.sealed !== "string") return null;
    const raw = Buffer.from(stored.sealed, "base64");
    if (raw.length < 28) return null;
    const { key, aad } = sealingKey(token, file);
    const d = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12)).setAAD(aad);
    d.setAuthTag(raw.subarray(raw.length - 16));
    return JSON.parse(Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]).toString("utf8"));
  } catch {
    return null;
  }
}

export function saveBootstrap(dir: string, token: string, response: BootstrapResponse, now: Date): void {
  writeSealed(dir, BOOTSTRAP_FILE, token, { saved_at: now.toISOString(), response });
}

export function loadBootstrap(dir: string, token: string): BootstrapResponse | null {
  const response = (readSealed(dir, BOOTSTRAP_FILE, token) as { response?: unknown } | null)?.response;
  return matches(BootstrapResponse, response) ? response : null;
}

/**
 * Deletes everything the control plane gave to this token (the bootstrap answer and the last
 * good bundle), durably: after the control plane refused the credential, a restart must not
 * decide on them again. The replica id and the credential-sync identity stay.
 */
export function forgetCredentialState(dir: string, files: readonly string[]): void {
  for (const f of files) rmSync(join(dir, f), { force: true });
  try {
    fsyncDir(dir);
  } catch {}
}
