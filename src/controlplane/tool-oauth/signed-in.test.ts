// Who signed in at a tool server's authorization server (signed-in.ts): the scope that asks it
// to say, and the comparison the consent callback refuses a forwarded link with.
import { describe, expect, test } from "bun:test";
import { emailOf, requestedScope, signedInAsAnother, subjectOf } from "./signed-in.ts";

const jwt = (claims: Record<string, unknown>) => `eyJhbGciOiJub25lIn0.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.sig`;
const tokens = (t: { id_token?: string; access_token?: string }) => ({ token_type: "Bearer", access_token: t.access_token ?? "opaque-access-token", ...(t.id_token ? { id_token: t.id_token } : {}) });

describe("requestedScope", () => {
  test("adds openid email only when the authorization server offers both", () => {
    expect(requestedScope({ scopes_supported: ["openid", "email", "notes"] }, "notes")).toBe("notes openid email");
    expect(requestedScope({ scopes_supported: ["openid", "notes"] }, "notes")).toBe("notes");
    expect(requestedScope({}, null)).toBeNull();
    expect(requestedScope({ scopes_supported: ["openid", "email"] }, null)).toBe("openid email");
    expect(requestedScope({ scopes_supported: ["openid", "email"] }, "openid email repo")).toBe("openid email repo");
  });
});

describe("who signed in", () => {
  test("the ID token's email first, else a JWT access token's, else none", () => {
    expect(emailOf(tokens({ id_token: jwt({ sub: "a", email: "alice@example.com" }), access_token: jwt({ email: "other@example.com" }) }))).toBe("alice@example.com");
    expect(emailOf(tokens({ access_token: jwt({ sub: "a", email: "alice@example.com" }) }))).toBe("alice@example.com");
    expect(emailOf(tokens({}))).toBeNull();
    expect(emailOf(tokens({ id_token: "not.a-jwt" }))).toBeNull();
    expect(emailOf(tokens({ id_token: jwt({ email: 42 }) }))).toBeNull();
    expect(subjectOf(tokens({ id_token: jwt({ sub: "alice-at-idp" }) }))).toBe("alice-at-idp");
  });

  test("another person's email is named; the same email in other case, or none, is not", () => {
    expect(signedInAsAnother(tokens({ id_token: jwt({ email: "alice@example.com" }) }), "bob@example.com")).toBe("alice@example.com");
    expect(signedInAsAnother(tokens({ id_token: jwt({ email: "Bob@Example.COM" }) }), "bob@example.com")).toBeNull();
    expect(signedInAsAnother(tokens({}), "bob@example.com")).toBeNull();
  });
});
