// Checks on a sealed API key as the admin API receives it: base64 of a binary age file,
// sealed to runtime replicas of the profile's workspace. The service cannot open it and never
// tries; it only refuses what is plainly not an age file or names replicas it does not know.
// An age file does not name its recipients, so the credential-sync recipients of the replicas
// named in sealed_to are recorded with the key: a replica that later bootstraps with a new key
// keeps its id but can no longer open the key, and readiness sees that.
import { SvcError } from "../../contract/errors.ts";

const AGE_HEADER = "age-encryption.org/v1\n";
const BASE64_RE = /^[A-Za-z0-9+/]+={0,2}$/;

export const PLAINTEXT_KEY_MESSAGE =
  'the service never receives a plaintext API key: seal it to the runtimes\' credential-sync keys (GET runtime-recipients) and send "api_key_sealed" with "sealed_to"; `svc model-profiles create --auth-type api_key` does this';

function refuse(path: string, message: string): never {
  throw new SvcError("validation_failed", message, { errors: [{ path, message }] });
}

export function refusePlaintextKey(body: { api_key?: unknown }): void {
  if (body.api_key !== undefined) refuse("/api_key", PLAINTEXT_KEY_MESSAGE);
}

/** `field`: the body member that carried it (a tool server's secrets_sealed is checked the same way). */
export function checkSealedKey(sealed: string, field = "api_key_sealed"): void {
  if (sealed.length % 4 !== 0 || !BASE64_RE.test(sealed)) refuse(`/${field}`, `${field} must be standard base64 (of the binary age file)`);
  const head = Buffer.from(sealed.slice(0, 64), "base64").toString("latin1");
  if (!head.startsWith(AGE_HEADER)) refuse(`/${field}`, `${field} is not an age file (it must start with "${AGE_HEADER.trim()}")`);
}

/**
 * The replica ids sealed to, deduplicated, and their credential-sync recipients now (`known`:
 * the workspace's live replicas, id → recipient); every id must be one of them.
 */
export function checkSealedTo(sealedTo: string[], known: ReadonlyMap<string, string>): { sealedTo: string[]; sealedRecipients: string[] } {
  const ids = [...new Set(sealedTo)];
  if (ids.length === 0) refuse("/sealed_to", "sealed_to must list the replica ids the key was sealed to");
  const unknown = ids.filter((id) => !known.has(id));
  if (unknown.length) refuse("/sealed_to", `sealed_to names replicas that are not live runtimes of this workspace: ${unknown.join(", ")}`);
  ids.sort();
  return { sealedTo: ids, sealedRecipients: [...new Set(ids.map((id) => known.get(id)!))].sort() };
}
