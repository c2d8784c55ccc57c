// What the proxy keeps in its state directory besides the bundle: the replica id (generated
// once, sent as x-svc-replica) and the last bootstrap answer (the digest key and ids), so a
// restart while the control plane is down can keep deciding and auditing on the last good
// bundle. Files are 0600 in a 0700 directory; the digest key is a secret and never logged.
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createHash } from "node:crypto";
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

type StoredBootstrap = { token_fingerprint: string; saved_at: string; response: BootstrapResponse };

export function saveBootstrap(dir: string, token: string, response: BootstrapResponse, now: Date): void {
  const stored: StoredBootstrap = { token_fingerprint: tokenFingerprint(token), saved_at: now.toISOString(), response };
  writeFileDurably(join(dir, BOOTSTRAP_FILE), JSON.stringify(stored), 0o600);
}

export function loadBootstrap(dir: string, token: string): BootstrapResponse | null {
  try {
    const stored = JSON.parse(readFileSync(join(dir, BOOTSTRAP_FILE), "utf8")) as StoredBootstrap;
    if (stored.token_fingerprint !== tokenFingerprint(token)) return null;
    return matches(BootstrapResponse, stored.response) ? stored.response : null;
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
