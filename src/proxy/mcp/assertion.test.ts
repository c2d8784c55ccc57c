// The runtime's assertion signer (issue 32), pure parts and the key holder: the claims and the
// header verify with an ordinary JWT library (jose's jwtVerify against the public JWK), the
// lifetime is 60 s, a non-call request is asserted as the installation, the key is imported
// non-extractable, and a request in a call's scope presents that call's identity.
import { describe, expect, test } from "bun:test";
import { Encrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { exportJWK, generateKeyPair, importJWK, jwtVerify } from "jose";
import { assertionClaims, assertionHeaderValue, checkAssertionHeader } from "../../contract/identity-assertion.ts";
import { linesLogger } from "../../log/index.ts";
import { credentialSync } from "../link/credential-sync.ts";
import { AssertionKeys, signAssertion } from "./assertion.ts";
import { type IdentifiedCall, callScope, presentIdentity } from "./upstream-identity.ts";

const alice = { sub: "usr_alice", email: "alice@example.com", groups: ["sales"], tool: "lookup", audit_record_id: "rec_01JTEST000000000000000000A" };

async function keyPair() {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  return { publicJwk: await exportJWK(publicKey), privateJwk: { ...(await exportJWK(privateKey)), kid: "ak_1", alg: "ES256" } };
}

/** Material as the control plane sends it: the private JWK sealed to this replica's credential-sync recipient. */
async function sealedMaterial(privateJwk: object, recipient: string) {
  const e = new Encrypter();
  e.addRecipient(recipient);
  return { id: "ak_1", alg: "ES256" as const, issuer: "https://cp.example.com", sealed_private_jwk: Buffer.from(await e.encrypt(JSON.stringify(privateJwk))).toString("base64") };
}

async function holder(o: { now?: () => number } = {}) {
  const { publicJwk, privateJwk } = await keyPair();
  const identity = await generateX25519Identity();
  const sync = await credentialSync(identity);
  const material = await sealedMaterial(privateJwk, await identityToRecipient(identity));
  const lines: string[] = [];
  let fetched = 0;
  const keys = new AssertionKeys({ fetch: async () => (fetched++, material), open: async (s) => sync.openBytes(s), installationId: () => "inst_1", log: linesLogger(lines), ...o });
  return { keys, publicJwk, privateJwk, lines, fetched: () => fetched };
}

describe("assertion claims and signature", () => {
  test("a user's call: iss, aud, sub, email, groups, tool, record id, jti; 60 s; ES256 with kid and typ; verifies with jose", async () => {
    const { publicJwk, privateJwk } = await keyPair();
    const key = { id: "ak_1", issuer: "https://cp.example.com", key: (await importJWK(privateJwk, "ES256")) as CryptoKey };
    const claims = assertionClaims({ issuer: key.issuer, audience: "https://kb.example.com/mcp", installationId: "inst_1", subject: alice, jti: "j-1", nowSeconds: 1_800_000_000 });
    const jwt = await signAssertion(key, claims);
    const { payload, protectedHeader } = await jwtVerify(jwt, await importJWK(publicJwk, "ES256"), {
      issuer: key.issuer,
      audience: "https://kb.example.com/mcp",
      currentDate: new Date(1_800_000_030_000),
      algorithms: ["ES256"],
    });
    expect(protectedHeader).toEqual({ alg: "ES256", kid: "ak_1", typ: "JWT" });
    expect(payload).toEqual({
      iss: key.issuer,
      aud: "https://kb.example.com/mcp",
      sub: "usr_alice",
      email: "alice@example.com",
      groups: ["sales"],
      tool: "lookup",
      audit_record_id: alice.audit_record_id,
      jti: "j-1",
      iat: 1_800_000_000,
      exp: 1_800_000_060,
    });
    // 61 s later it has expired; another audience is refused
    await expect(jwtVerify(jwt, await importJWK(publicJwk, "ES256"), { currentDate: new Date(1_800_000_061_000) })).rejects.toThrow(/exp/);
    await expect(jwtVerify(jwt, await importJWK(publicJwk, "ES256"), { audience: "https://other.example.com/mcp", currentDate: new Date(1_800_000_001_000) })).rejects.toThrow(/aud/);
  });

  test("the runtime's own request is asserted as the installation: no email, groups, tool or record", () => {
    const c = assertionClaims({ issuer: "i", audience: "a", installationId: "inst_1", subject: null, jti: "j", nowSeconds: 10 });
    expect(c).toEqual({ iss: "i", aud: "a", sub: "inst_1", jti: "j", iat: 10, exp: 70 });
  });

  test("the header value: Authorization takes the bearer scheme, any other header the bare JWT", () => {
    expect(assertionHeaderValue("Authorization", "a.b.c")).toBe("Bearer a.b.c");
    expect(assertionHeaderValue("X-Svc-Identity", "a.b.c")).toBe("a.b.c");
  });

  test("the header's rules: a header name, not one the transport sets, not a secret header (any case)", () => {
    expect(checkAssertionHeader("X-Svc-Identity", ["Authorization"])).toEqual({ ok: true });
    expect(checkAssertionHeader("authorization", ["Authorization"])).toMatchObject({ ok: false, message: expect.stringContaining("secret headers") });
    expect(checkAssertionHeader("Content-Type", [])).toMatchObject({ ok: false, message: expect.stringContaining("MCP transport") });
    expect(checkAssertionHeader("X Id", [])).toMatchObject({ ok: false, message: expect.stringContaining("not an HTTP header name") });
  });
});

describe("the key on the runtime", () => {
  test("followed by id: fetched once per id, opened with the replica's identity, imported non-extractable; mints fresh jtis", async () => {
    const h = await holder({ now: () => 1_800_000_000_000 });
    await expect(h.keys.mint("X-Svc-Identity", "aud", alice)).rejects.toThrow(/no identity-assertion key/);
    await h.keys.follow("ak_1");
    await h.keys.follow("ak_1");
    expect(h.fetched()).toBe(1);
    expect(h.keys.keyId).toBe("ak_1");
    const m1 = await h.keys.mint("X-Svc-Identity", "aud", alice);
    const m2 = await h.keys.mint("X-Svc-Identity", "aud", alice);
    expect(m1.presented).toEqual({ kind: "assertion", jti: expect.any(String), subject: "usr_alice" });
    expect(m2.presented).not.toEqual(m1.presented);
    const { payload } = await jwtVerify(m1.value, await importJWK(h.publicJwk, "ES256"), { currentDate: new Date(1_800_000_001_000) });
    expect(payload.jti).toBe((m1.presented as { jti: string }).jti);
    // nothing can read the private key back out of the runtime
    const held = (h.keys as unknown as { held: { key: CryptoKey } }).held.key;
    expect(held.extractable).toBe(false);
    await expect(crypto.subtle.exportKey("jwk", held)).rejects.toThrow();
    expect(h.lines.join("\n")).not.toContain(h.privateJwk.d!);
    // a bundle without assertions drops it
    await h.keys.follow(undefined);
    expect(h.keys.keyId).toBeNull();
  });

  test("a request inside a call's scope presents that call's identity and notes it; outside, the installation's", async () => {
    const h = await holder();
    await h.keys.follow("ak_1");
    const source = { header: "X-Svc-Identity", mint: async (s: typeof alice | null) => h.keys.mint("X-Svc-Identity", "aud", s) };
    const outside = new Headers();
    await presentIdentity(outside, source);
    expect(JSON.parse(Buffer.from(outside.get("x-svc-identity")!.split(".")[1]!, "base64url").toString()).sub).toBe("inst_1");
    const call: IdentifiedCall = { identity: alice };
    const inside = new Headers();
    await callScope.run(call, async () => {
      await Bun.sleep(1); // across an await, as the SDK's send is
      await presentIdentity(inside, source);
    });
    const sent = JSON.parse(Buffer.from(inside.get("x-svc-identity")!.split(".")[1]!, "base64url").toString()) as { sub: string; jti: string };
    expect(sent.sub).toBe("usr_alice");
    expect(call.presented).toEqual({ kind: "assertion", jti: sent.jti, subject: "usr_alice" });
  });

  test("a call made for the installation (no service user in the identity map) presents the runtime, and its record names that assertion", async () => {
    const h = await holder();
    await h.keys.follow("ak_1");
    const source = { header: "X-Svc-Identity", mint: async (s: typeof alice | null) => h.keys.mint("X-Svc-Identity", "aud", s) };
    const call: IdentifiedCall = {};
    const headers = new Headers();
    await callScope.run(call, async () => presentIdentity(headers, source));
    const sent = JSON.parse(Buffer.from(headers.get("x-svc-identity")!.split(".")[1]!, "base64url").toString()) as { sub: string; jti: string };
    expect(sent.sub).toBe("inst_1");
    expect(call.presented).toEqual({ kind: "assertion", jti: sent.jti, subject: "inst_1" });
  });
});
