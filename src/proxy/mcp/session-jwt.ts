// Who is calling the MCP gateway: the Open WebUI session JWT that Open WebUI forwards as
// `Authorization: Bearer …` on a tool-server connection with auth_type "session". Open WebUI
// signs it HS256 with its secret key (WEBUI_SECRET_KEY, which svc run sets from
// CHATUI_SECRET_KEY) and puts the user id in the `id` claim. The proxy verifies the signature
// (timing-safe) and the expiry itself; no header that code in the front end could set is
// trusted. Open WebUI API keys (`sk-…`, forwarded instead of a JWT when a call came with one)
// cannot be verified here (only Open WebUI holds their hashes): they are refused, so API-key
// clients get no MCP tools (docs/mcp.md). A token whose `typ` Open WebUI does not take as a
// session (`password-reset`, …) is refused here; whether Open WebUI still takes the session
// (its session stamp, MFA, revocation) is asked of Open WebUI itself (session-check.ts).
import { createHmac, timingSafeEqual } from "node:crypto";

/** Seconds of clock skew tolerated on `exp`. */
export const EXPIRY_LEEWAY_S = 30;
const MAX_TOKEN_LENGTH = 8192;

/** The token types Open WebUI 0.12.4's is_valid_token takes (utils/auth.py); absent means `session`. */
export const SESSION_TOKEN_TYPES = ["session", "automation", "subagent"] as const;

export type SessionIdentity = { ok: true; userId: string; token: string } | { ok: false; reason: "missing" | "api_key" | "malformed" | "bad_signature" | "expired" | "no_user" | "not_a_session" };

function b64urlJson(part: string): Record<string, unknown> | null {
  try {
    const doc = JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as unknown;
    return doc && typeof doc === "object" && !Array.isArray(doc) ? (doc as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Verify `Authorization: Bearer <jwt>` against the front end's secret (pure but for `nowS`). */
export function verifySession(authorization: string | null, secret: string, nowS: number): SessionIdentity {
  const m = /^Bearer\s+(\S+)$/i.exec(authorization?.trim() ?? "");
  if (!m) return { ok: false, reason: "missing" };
  const token = m[1]!;
  if (token.startsWith("sk-")) return { ok: false, reason: "api_key" };
  if (token.length > MAX_TOKEN_LENGTH) return { ok: false, reason: "malformed" };
  const parts = token.split(".");
  if (parts.length !== 3) return { ok: false, reason: "malformed" };
  const [h, p, s] = parts as [string, string, string];
  const header = b64urlJson(h);
  if (!header || header.alg !== "HS256") return { ok: false, reason: "malformed" };
  const expected = createHmac("sha256", secret).update(`${h}.${p}`).digest();
  const given = Buffer.from(s, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: "bad_signature" };
  const payload = b64urlJson(p);
  if (!payload) return { ok: false, reason: "malformed" };
  if (payload.exp !== undefined && (typeof payload.exp !== "number" || payload.exp + EXPIRY_LEEWAY_S < nowS)) return { ok: false, reason: "expired" };
  if (typeof payload.id !== "string" || !payload.id) return { ok: false, reason: "no_user" };
  const typ = payload.typ ?? "session";
  if (typeof typ !== "string" || !(SESSION_TOKEN_TYPES as readonly string[]).includes(typ)) return { ok: false, reason: "not_a_session" };
  return { ok: true, userId: payload.id, token };
}

/** A token as Open WebUI makes one (tests, bench). */
export function signSession(payload: Record<string, unknown>, secret: string): string {
  const h = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");
  const p = Buffer.from(JSON.stringify(payload)).toString("base64url");
  const s = createHmac("sha256", secret).update(`${h}.${p}`).digest("base64url");
  return `${h}.${p}.${s}`;
}
