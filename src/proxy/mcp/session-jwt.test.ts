import { describe, expect, test } from "bun:test";
import { signSession, verifySession } from "./session-jwt.ts";

const SECRET = "front-end-secret";
const now = 1_800_000_000;
const bearer = (t: string) => `Bearer ${t}`;

describe("verifySession", () => {
  test("a token Open WebUI signed with the shared secret names its user", () => {
    const token = signSession({ id: "u-1", jti: "x", iat: now }, SECRET);
    expect(verifySession(bearer(token), SECRET, now)).toEqual({ ok: true, userId: "u-1", token });
  });

  test("a token made with another secret, a changed payload or an expired one is refused", () => {
    expect(verifySession(bearer(signSession({ id: "u-1" }, "other")), SECRET, now)).toEqual({ ok: false, reason: "bad_signature" });
    const [h, , s] = signSession({ id: "u-1" }, SECRET).split(".");
    const forged = `${h}.${Buffer.from(JSON.stringify({ id: "admin" })).toString("base64url")}.${s}`;
    expect(verifySession(bearer(forged), SECRET, now)).toEqual({ ok: false, reason: "bad_signature" });
    expect(verifySession(bearer(signSession({ id: "u-1", exp: now - 120 }, SECRET)), SECRET, now)).toEqual({ ok: false, reason: "expired" });
    expect(verifySession(bearer(signSession({ id: "u-1", exp: now + 120 }, SECRET)), SECRET, now).ok).toBe(true);
  });

  test("no credential, an API key, alg none or no user id: refused with the reason", () => {
    expect(verifySession(null, SECRET, now)).toEqual({ ok: false, reason: "missing" });
    expect(verifySession("Bearer sk-123", SECRET, now)).toEqual({ ok: false, reason: "api_key" });
    const none = `${Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url")}.${Buffer.from(JSON.stringify({ id: "u-1" })).toString("base64url")}.`;
    expect(verifySession(bearer(none), SECRET, now)).toEqual({ ok: false, reason: "malformed" });
    expect(verifySession(bearer(signSession({ sub: "u-1" }, SECRET)), SECRET, now)).toEqual({ ok: false, reason: "no_user" });
  });

  test("only the token types Open WebUI takes as sessions: a password-reset token is refused, however well signed", () => {
    for (const typ of ["session", "automation", "subagent"]) expect(verifySession(bearer(signSession({ id: "u-1", typ }, SECRET)), SECRET, now).ok).toBe(true);
    for (const typ of ["password-reset", "refresh", "", 1]) expect(verifySession(bearer(signSession({ id: "u-1", typ }, SECRET)), SECRET, now)).toEqual({ ok: false, reason: "not_a_session" });
  });
});
