// The OIDC sign-in checks with a scripted provider (discovery, JWKS and token endpoint on a
// loopback port; ID tokens signed here with jose): signature against the JWKS, audience,
// nonce, state, PKCE verifier, verified email, membership. The browser flow against a real
// provider is in test/integration/console-oidc.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { generateKeyPair } from "jose";
import { addMembership, createAccount } from "../auth/service.ts";
import { tables } from "../db/index.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { type ScriptedIdp, startScriptedIdp } from "./scripted-idp.ts";
import { SsoError, finishSso, saveOidcSettings, startSso, validateIssuer } from "./oidc.ts";
import { actingAsSystem } from "../audit/admin-events.ts";

let idp: ScriptedIdp;
beforeAll(async () => {
  idp = await startScriptedIdp();
});
afterAll(() => idp.stop());

async function begin(cp: TestControlPlane) {
  await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "s3cret" }, actingAsSystem(cp.deps, "controlplane"));
  const { location, flow } = await startSso(cp.deps, cp.orgId, "/audit");
  const q = new URL(location).searchParams;
  return { flow, state: q.get("state")!, nonce: q.get("nonce")!, challenge: q.get("code_challenge")!, q };
}

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(SsoError);
    return (e as Error).message;
  }
  throw new Error("expected a refusal");
}

describe("validateIssuer", () => {
  test("https anywhere, http only on loopback, nothing extra in the URL", () => {
    expect(validateIssuer("https://login.example.com/realms/acme")).toBe("https://login.example.com/realms/acme");
    expect(validateIssuer("https://tenant.auth0.com/")).toBe("https://tenant.auth0.com/");
    expect(validateIssuer("http://127.0.0.1:9000")).toBe("http://127.0.0.1:9000");
    expect(() => validateIssuer("http://login.example.com")).toThrow("https");
    expect(() => validateIssuer("https://u:p@login.example.com")).toThrow("credentials");
    expect(() => validateIssuer("https://login.example.com/?x=1")).toThrow("query");
    expect(() => validateIssuer("not a url")).toThrow("not a URL");
  });
});

describe("finishSso", () => {
  test("the authorization request carries PKCE S256, state and nonce; a good ID token signs in the member", async () => {
    const cp = await testControlPlane();
    const admin = await createAccount(cp.deps.db, { email: "admin@example.com" });
    await addMembership(cp.deps.db, admin.id, cp.orgId, "admin", { by: null, join: "added", at: cp.deps.now() });
    const { flow, state, nonce, challenge, q } = await begin(cp);
    expect(q.get("code_challenge_method")).toBe("S256");
    expect(q.get("redirect_uri")).toBe("http://127.0.0.1:8420/sso/callback");
    expect(q.get("scope")).toContain("openid");
    idp.nextIdToken = await idp.idToken({ nonce, email: "Admin@Example.com", email_verified: true });
    const result = await finishSso(cp.deps, flow, new URLSearchParams({ state, code: "c1" }));
    expect(result).toMatchObject({ orgId: cp.orgId, accountId: admin.id, email: "admin@example.com", next: "/audit" });
    // the verifier sent matches the challenge; the client authenticated with its secret
    expect(createHash("sha256").update(idp.lastTokenRequest!.verifier!).digest("base64url")).toBe(challenge);
    expect(idp.lastTokenRequest!.auth).toBe(`Basic ${Buffer.from("console:s3cret").toString("base64")}`);
  });

  test("an ID token signed by a key outside the provider's JWKS is refused", async () => {
    const cp = await testControlPlane();
    const { flow, state, nonce } = await begin(cp);
    idp.nextIdToken = await idp.idToken({ nonce, email: "owner@example.com", email_verified: true }, { key: await generateKeyPair("RS256") });
    expect(await refusal(finishSso(cp.deps, flow, new URLSearchParams({ state, code: "c" })))).toContain("did not verify");
  });

  test("another audience, another issuer, or another nonce is refused", async () => {
    const cp = await testControlPlane();
    for (const [claims, opts, why] of [
      [{}, { aud: "someone-else" }, "did not verify"],
      [{}, { iss: "http://127.0.0.1:1" }, "did not verify"],
      [{ nonce: "other" }, {}, "nonce mismatch"],
    ] as const) {
      const { flow, state, nonce } = await begin(cp);
      idp.nextIdToken = await idp.idToken({ nonce, email: "owner@example.com", email_verified: true, ...claims }, opts);
      expect(await refusal(finishSso(cp.deps, flow, new URLSearchParams({ state, code: "c" })))).toContain(why);
    }
  });

  test("an owner's email is refused: owners sign in with their password", async () => {
    const cp = await testControlPlane();
    const b = await begin(cp);
    idp.nextIdToken = await idp.idToken({ nonce: b.nonce, email: "owner@example.com", email_verified: true });
    expect(await refusal(finishSso(cp.deps, b.flow, new URLSearchParams({ state: b.state, code: "c" })))).toContain("owners sign in with their password");
  });

  test("an unverified email, or an email without membership, is refused", async () => {
    const cp = await testControlPlane();
    const outsider = await createAccount(cp.deps.db, { email: "outsider@example.com" });
    let b = await begin(cp);
    idp.nextIdToken = await idp.idToken({ nonce: b.nonce, email: "owner@example.com", email_verified: false });
    expect(await refusal(finishSso(cp.deps, b.flow, new URLSearchParams({ state: b.state, code: "c" })))).toContain("has not verified");
    b = await begin(cp);
    idp.nextIdToken = await idp.idToken({ nonce: b.nonce, email: outsider.email, email_verified: true });
    expect(await refusal(finishSso(cp.deps, b.flow, new URLSearchParams({ state: b.state, code: "c" })))).toContain("not a member");
    await addMembership(cp.deps.db, outsider.id, cp.orgId, "member", { by: null, join: "added", at: cp.deps.now() });
    b = await begin(cp);
    idp.nextIdToken = await idp.idToken({ nonce: b.nonce, email: outsider.email, email_verified: true });
    expect((await finishSso(cp.deps, b.flow, new URLSearchParams({ state: b.state, code: "c" }))).accountId).toBe(outsider.id);
  });

  test("a wrong state, a tampered or expired flow cookie, or a provider error is refused", async () => {
    let now = Date.now();
    const cp = await testControlPlane({ now: () => now });
    const { flow, state } = await begin(cp);
    expect(await refusal(finishSso(cp.deps, flow, new URLSearchParams({ state: "x", code: "c" })))).toContain("state mismatch");
    expect(await refusal(finishSso(cp.deps, `${flow.slice(0, -4)}AAAA`, new URLSearchParams({ state, code: "c" })))).toContain("could not be read");
    expect(await refusal(finishSso(cp.deps, undefined, new URLSearchParams({ state, code: "c" })))).toContain("not started here");
    expect(await refusal(finishSso(cp.deps, flow, new URLSearchParams({ state, error: "access_denied" })))).toContain("access_denied");
    expect(await refusal(finishSso(cp.deps, flow, new URLSearchParams({ state, code: "c", iss: "https://evil.example" })))).toContain("another identity provider");
    now += 11 * 60 * 1000;
    expect(await refusal(finishSso(cp.deps, flow, new URLSearchParams({ state, code: "c" })))).toContain("took too long");
  });

  test("the client secret is stored wrapped under the organization's context", async () => {
    const cp = await testControlPlane();
    await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "s3cret" }, actingAsSystem(cp.deps, "controlplane"));
    const o = tables(cp.deps.db).oidcConfigs;
    const row = (await cp.deps.db.select({ w: o.wrappedClientSecret }).from(o))[0]!;
    expect(row.w).not.toContain("s3cret");
    expect(new TextDecoder().decode(cp.deps.kms.unwrap(row.w, `oidc:${cp.orgId}`))).toBe("s3cret");
    expect(() => cp.deps.kms.unwrap(row.w, "oidc:org_other")).toThrow();
    // a blank secret on update keeps the stored one
    await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console2", clientSecret: "" }, actingAsSystem(cp.deps, "controlplane"));
    const [again] = await cp.deps.db.select({ w: o.wrappedClientSecret, c: o.clientId }).from(o);
    expect(again).toEqual({ w: row.w, c: "console2" });
  });
});

describe("outbound URL policy for issuers", () => {
  test("a non-public issuer is refused at save time, and a stored one before discovery", async () => {
    const cp = await testControlPlane({ config: { allowPrivateOutbound: false } });
    for (const issuer of ["http://127.0.0.1:9000", "https://169.254.169.254/", "https://192.168.0.10/realms/acme", "https://[fd00::1]/"]) {
      await expect(saveOidcSettings(cp.deps, cp.orgId, { issuer, clientId: "console", clientSecret: "s" }, actingAsSystem(cp.deps, "controlplane"))).rejects.toThrow(/address/);
    }
    cp.deps.config.allowPrivateOutbound = true;
    await saveOidcSettings(cp.deps, cp.orgId, { issuer: "http://127.0.0.1:9", clientId: "console", clientSecret: "s" }, actingAsSystem(cp.deps, "controlplane"));
    cp.deps.config.allowPrivateOutbound = false;
    await expect(startSso(cp.deps, cp.orgId, "/")).rejects.toThrow(/loopback address/);
  });
});
