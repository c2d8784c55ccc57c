// Test fixtures for escrow recovery: an organization with a customer key, escrow on, and three
// stored records: one encrypted to the customer key only (before escrow), one to the customer
// key and escrow, one digest-only; a second owner whom the first (bootstrap) owner added through
// the API; and a clock the test moves, which stands a day and more after that addition. So the
// second owner may request and the first approve (the first owner was never granted anything by
// the second); the other way round is the sockpuppet path. Used by *.test.ts files only.
import { expect } from "bun:test";
import { Encrypter } from "age-encryption";
import { PASSWORD, signInSession } from "../auth/test-fixtures.ts";
import { actingAsSystem } from "../audit/admin-events.ts";
import { issueApiToken } from "../auth/api-tokens.ts";
import { addInstallation, auditRecord, newRecipient } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";

export const ARGS = JSON.stringify({ customer: "ACME-4711", note: "confidential" });
export const HOUR = 3_600_000;

/**
 * A clock the test moves forward. Each reading also moves it 1 ms, as real time does: ids made
 * from it (admin events, requests) then sort in the order they were made.
 */
export function testClock(start = Date.now()) {
  let t = start;
  return { now: () => t++, advance: (ms: number) => (t += ms) };
}

/** An API token issued from a sign-in made now (as `svc login` right after signing in). */
export async function freshToken(cp: TestControlPlane, accountId: string): Promise<string> {
  return (await issueApiToken(cp.deps, { accountId, orgId: cp.orgId, name: "fresh", signIn: { at: cp.deps.now() } }, actingAsSystem(cp.deps, "controlplane"))).token;
}

/** Adds a member through the API as `token`'s account; returns its account id. */
export async function addMemberAs(cp: TestControlPlane, token: string, email: string, role: "owner" | "admin" | "member", password: string | null = PASSWORD): Promise<string> {
  const res = await cp.call("POST", cp.org("/members"), { token, body: { email, role, ...(password ? { password } : {}) } });
  expect(res.status).toBe(201);
  return res.json.account_id;
}

/** A console session of `email` signed in now (cookie and CSRF token as API headers). */
export async function sessionHeaders(cp: TestControlPlane, email: string) {
  const s = await signInSession(cp, email);
  return { token: null, headers: { cookie: s.cookie, "x-csrf-token": s.csrf } };
}

export async function world() {
  const clock = testClock();
  const cp = await testControlPlane({ now: clock.now });
  const inst = await addInstallation(cp);
  const customer = await newRecipient();
  const key = (await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "sec", public_key: customer.recipient } })).json;
  const before = auditRecord(inst, { args_digest: null, digest_key_id: null, recipient_key_ids: [key.id], ciphertext: await seal([customer.recipient]) });
  const settings = (await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: true } })).json;
  const escrowKeyId = ((await cp.call("GET", cp.org("/audit-encryption-keys"))).json.keys as { id: string; kind: string }[]).find((k) => k.kind === "escrow")!.id;
  const escrowed = auditRecord(inst, { args_digest: null, digest_key_id: null, recipient_key_ids: [key.id, escrowKeyId], ciphertext: await seal([customer.recipient, settings.escrow_recipient]) });
  const digestOnly = auditRecord(inst);
  const shipped = await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [before, escrowed, digestOnly] } });
  expect(shipped.json.inserted).toBe(3);
  const email = "second.owner@example.com";
  const secondId = await addMemberAs(cp, cp.adminToken, email, "owner");
  clock.advance(25 * HOUR);
  const second = { accountId: secondId, email, token: await freshToken(cp, secondId) };
  return { cp, clock, escrowed, before, digestOnly, escrowKeyId, second, owner: { accountId: cp.accountId, email: "owner@example.com" } };
}

/** The second owner's request for the escrowed record; returns its id. */
export async function requestBySecond(w: Awaited<ReturnType<typeof world>>, reason = "incident 4711"): Promise<string> {
  const res = await w.cp.call("POST", w.cp.org("/audit-recovery-requests"), { token: w.second.token, body: { record_id: w.escrowed.id, reason } });
  expect(res.status).toBe(201);
  return res.json.id;
}

async function seal(recipients: string[]): Promise<string> {
  const e = new Encrypter();
  for (const r of recipients) e.addRecipient(r);
  return Buffer.from(await e.encrypt(ARGS)).toString("base64");
}
