// Signed identity assertions (issue 32, docs/mcp.md "Identity at the tool"): the runtime's side.
// The organization's ES256 key arrives from the control plane sealed to this replica's
// credential-sync key (GET runtime/assertion-key), is opened once and imported as a
// non-extractable WebCrypto key: from then on no code path can read it back out (not a log
// line, not the local API, not the state directory, where it is never written). A proxy that
// restarts while the control plane is unreachable has no key, and calls to servers that ask for
// assertions fail (closed) until it gets one. Each HTTP request to such a server carries a fresh
// assertion (`mint`): the signer is pure but for the clock and the jti.
import { type CryptoKey, importJWK, SignJWT } from "jose";
import { ASSERTION_ALG, type AssertionClaims, type AssertionKeyMaterial, type AssertionSubject, assertionClaims, assertionHeaderValue } from "../../contract/identity-assertion.ts";
import type { UpstreamIdentity } from "../../contract/audit.ts";
import type { Logger } from "../../log/index.ts";

export type AssertionKey = { id: string; issuer: string; key: CryptoKey };

/** Signs claims with the key: a compact JWS with `kid` and `typ: JWT`. */
export async function signAssertion(key: AssertionKey, claims: AssertionClaims): Promise<string> {
  return new SignJWT({ ...claims }).setProtectedHeader({ alg: ASSERTION_ALG, kid: key.id, typ: "JWT" }).sign(key.key);
}

/** Opens the sealed private JWK and imports it (non-extractable); the opened bytes are zeroed once parsed. */
export async function importAssertionKey(material: AssertionKeyMaterial, open: (sealed: string) => Promise<Uint8Array>): Promise<AssertionKey> {
  const bytes = await open(material.sealed_private_jwk);
  let jwk: Record<string, unknown>;
  try {
    jwk = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  } finally {
    bytes.fill(0);
  }
  if (jwk.kty !== "EC" || jwk.crv !== "P-256" || typeof jwk.d !== "string") throw new Error("the assertion key is not an EC P-256 private key");
  const key = (await importJWK(jwk, ASSERTION_ALG, { extractable: false })) as CryptoKey;
  return { id: material.id, issuer: material.issuer, key };
}

/** One request's assertion: the header value, and what the audit record names (never the value). */
export type Minted = { value: string; presented: UpstreamIdentity };

/**
 * The organization's current key on this replica, kept in step with the bundle's
 * `assertion_key_id`: a new id is fetched (a rotation, or the first server asking), none drops it.
 */
export class AssertionKeys {
  private held: AssertionKey | null = null;
  private following: Promise<void> | null = null;

  constructor(
    private readonly o: {
      fetch: () => Promise<AssertionKeyMaterial>;
      open: (sealed: string) => Promise<Uint8Array>;
      installationId: () => string | null;
      log: Logger;
      now?: () => number;
      jti?: () => string;
    },
  ) {}

  get keyId(): string | null {
    return this.held?.id ?? null;
  }

  /** Follow the bundle's id; never throws (a failure is logged and tried again at the next poll). */
  async follow(wanted: string | undefined | null): Promise<void> {
    if (!wanted) {
      this.held = null;
      return;
    }
    // Not bootstrapped yet (a last good bundle reloaded at start): the replica cannot be named; the next poll follows.
    if (this.held?.id === wanted || !this.o.installationId()) return;
    this.following ??= (async () => {
      try {
        const material = await this.o.fetch();
        const was = this.held?.id ?? null;
        this.held = await importAssertionKey(material, this.o.open);
        this.o.log.info("assertion key loaded", { assertion_key_id: material.id, retired_assertion_key_id: was });
      } catch (e) {
        this.o.log.warn("assertion key not loaded: calls to servers that ask for identity assertions fail until it is", { wanted_assertion_key_id: wanted, error: (e as Error).message.slice(0, 300) });
      }
    })().finally(() => {
      this.following = null;
    });
    return this.following;
  }

  /** A fresh assertion for one request to a server of `audience`, for a user's call or (null) the runtime itself. */
  async mint(header: string, audience: string, subject: AssertionSubject | null): Promise<Minted> {
    const key = this.held;
    const installationId = this.o.installationId();
    if (!key || !installationId) throw new Error("no identity-assertion key on this runtime yet (see its log: assertion key not loaded)");
    const jti = (this.o.jti ?? (() => crypto.randomUUID()))();
    const nowSeconds = Math.floor((this.o.now ?? Date.now)() / 1000);
    const claims = assertionClaims({ issuer: key.issuer, audience, installationId, subject, jti, nowSeconds });
    return { value: assertionHeaderValue(header, await signAssertion(key, claims)), presented: { kind: "assertion", jti, subject: claims.sub } };
  }
}
