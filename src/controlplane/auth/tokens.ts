// Bearer secrets: random, prefixed by kind so a leaked string says what it is, stored only as
// SHA-256. The prefixes keep a runtime token from ever authenticating as an admin and back.
import { randomBytes } from "node:crypto";

export const TOKEN_PREFIX = { admin: "svc_at_", runtime: "svc_rt_", session: "svc_ss_", claim: "svc_cl_", loginPoll: "svc_lp_", invite: "svc_iv_" } as const;
export type TokenKind = keyof typeof TOKEN_PREFIX;

export function newSecret(kind: TokenKind): string {
  return TOKEN_PREFIX[kind] + randomBytes(32).toString("base64url");
}

/** SHA-256 of the secret, hex (Bun's hasher: a fifth of node:crypto's cost, and every 304 bundle poll hashes its token). */
export function hashSecret(secret: string): string {
  return Bun.SHA256.hash(secret, "hex");
}

export function isKind(secret: string, kind: TokenKind): boolean {
  return secret.startsWith(TOKEN_PREFIX[kind]);
}

// bearer() and safeEqual() live in src/contract/bearer.ts (the proxy uses them too).
export { bearer, safeEqual } from "../../contract/bearer.ts";
