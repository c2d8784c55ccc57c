// What the proxy keeps in its state directory besides the bundle: the replica id (generated
// once, sent as x-svc-replica) and the last bootstrap answer (the digest key and ids), so a
// restart while the control plane is down can keep deciding and auditing on the last good
// bundle. Files are 0600 in a 0700 directory; the digest key is a secret and never logged.
// The front end runs as the same UID and can read these files (docs/frontend-boundary.md), so
// the bootstrap answer is sealed (AES-256-GCM) under a key derived from the runtime token,
// which the front end never gets: a copy of the directory does not give the digest key away.
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

/** v2 holds the answer sealed; v1 (before issue 27) held it in plain text and is sealed again when read. */
type StoredBootstrap = { v?: 2; token_fingerprint: string; saved_at: string; sealed?: string; response?: BootstrapResponse };

const SEAL_INFO = "svc proxy state: bootstrap.json v2";

function sealingKey(token: string): Buffer {
  return Buffer.from(hkdfSync("sha256", token, "svc-proxy-state", SEAL_INFO, 32));
}

/** base64 of iv (12) ‖ ciphertext ‖ tag (16). */
function seal(token: string, plain: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", sealingKey(token), iv).setAAD(Buffer.from(SEAL_INFO));
  const body = Buffer.concat([c.update(plain, "utf8"), c.final()]);
  return Buffer.concat([iv, body, c.getAuthTag()]).toString("base64");
}

function unseal(token: string, sealed: string): string {
  const raw = Buffer.from(sealed, "base64");
  const d = createDecipheriv("aes-256-gcm", sealingKey(token), raw.subarray(0, 12)).setAAD(Buffer.from(SEAL_INFO));
  d.setAuthTag(raw.subarray(raw.length - 16));
  return Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]).toString("utf8");
}

export function saveBootstrap(dir: string, token: string, response: BootstrapResponse, now: Date): void {
  const stored: StoredBootstrap = { v: 2, token_fingerprint: tokenFingerprint(token), saved_at: now.toISOString(), sealed: seal(token, JSON.stringify(response)) };
  writeFileDurably(join(dir, BOOTSTRAP_FILE), JSON.stringify(stored), 0o600);
}

export function loadBootstrap(dir: string, token: string): BootstrapResponse | null {
  try {
    const stored = JSON.parse(readFileSync(join(dir, BOOTSTRAP_FILE), "utf8")) as StoredBootstrap;
    if (stored.token_fingerprint !== tokenFingerprint(token)) return null;
    const response: unknown = stored.sealed ? JSON.parse(unseal(token, stored.sealed)) : stored.response;
    if (!matches(BootstrapResponse, response)) return null;
    // A v1 file held the digest key in plain text: seal it now, not at the next bootstrap.
    if (!stored.sealed) saveBootstrap(dir, token, response, new Date(stored.saved_at));
    return response;
  } catch {
    return null;
  }
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
