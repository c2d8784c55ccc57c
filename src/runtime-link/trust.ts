// The CA the runtime trusts for the control plane beside the system roots: SVC_PROXY_CA_FILE
// (docs/proxy.md), for the proxy daemon and the boot tool sync alike; without it the tool sync
// of `svc run` and `svc boot sync` could not reach a control plane behind an internal CA that
// the proxy itself reaches.
import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";

/** SVC_PROXY_CA_FILE cannot be read: the runtime must not start without the trust it was given. */
export class CaFileError extends Error {
  override name = "CaFileError";
}

/**
 * The `ca` for the runtime's calls: the system roots and the file's certificates, or null when
 * there is no file or it is in this process's default store already (NODE_EXTRA_CA_CERTS names
 * it: Bun read it at start, and a per-call CA would build a TLS context of every root each
 * time). Throws, naming the variable, when the file cannot be read.
 */
export function trustedCa(caFile: string | null | undefined, inDefaultStore: boolean): string[] | null {
  if (!caFile || inDefaultStore) return null;
  try {
    return [...rootCertificates, readFileSync(caFile, "utf8")];
  } catch (e) {
    throw new CaFileError(`SVC_PROXY_CA_FILE "${caFile}" cannot be read: ${(e as Error).message}`);
  }
}

/** trustedCa from this process's environment (the boot tool sync). */
export function trustedCaFromEnv(env: Record<string, string | undefined>): string[] | null {
  const file = env.SVC_PROXY_CA_FILE?.trim() || null;
  return trustedCa(file, file !== null && env.NODE_EXTRA_CA_CERTS?.trim() === file);
}
