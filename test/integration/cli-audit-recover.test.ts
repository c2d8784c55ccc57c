// Escrow recovery (break-glass, issue 15) with the real svc binary against a real control
// plane: the escrow key is listed as kind escrow; an owner requests, the same owner's approval
// is refused (a single approver is not enough), a second admin approves, the owner fetches the
// plaintext once and a second fetch is refused; the request, the approval and the decryption
// are three admin audit events that `svc audit list --kind admin` shows and `svc audit verify`
// covers; the control plane's log never holds the plaintext.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Encrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { api, bootstrapRuntime, createAgent, createInstallation, org, runtimeRecord, svc, tempHome } from "./cli-support.ts";

let cp: ControlPlaneProcess;
let runtime: Awaited<ReturnType<typeof bootstrapRuntime>>;
let secondToken: string;
const home = tempHome();
const SECRET = "ACME-4711-confidential-arguments";

beforeAll(async () => {
  cp = await startControlPlane();
  const agent = await createAgent(cp);
  runtime = await bootstrapRuntime(cp, (await createInstallation(cp, agent)).id);
  // A second admin, signed in with a password, with an API token of its own.
  const password = "a long enough password for the second admin";
  expect((await api(cp, "POST", org(cp, "/members"), { email: "second.admin@example.com", role: "admin", password })).status).toBe(201);
  const signIn = await fetch(`${cp.url}/api/v1/auth/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "second.admin@example.com", password, organization_id: cp.orgId }) });
  expect(signIn.status).toBe(200);
  const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
  const csrf = ((await signIn.json()) as { csrf_token: string }).csrf_token;
  const issued = await fetch(`${cp.url}/api/v1${org(cp, "/api-tokens")}`, { method: "POST", headers: { "content-type": "application/json", cookie, "x-csrf-token": csrf }, body: JSON.stringify({ name: "second" }) });
  expect(issued.status).toBe(201);
  secondToken = ((await issued.json()) as { token: string }).token;
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
  cleanup(home);
});

async function sealed(recipients: string[]): Promise<string> {
  const e = new Encrypter();
  for (const r of recipients) e.addRecipient(r);
  return Buffer.from(await e.encrypt(JSON.stringify({ arguments: { account: SECRET }, payload: null }))).toString("base64");
}

test("a single approver is refused; a second admin approves; the requester fetches once; three admin events are recorded and verified", async () => {
  const customer = await identityToRecipient(await generateX25519Identity());
  const key = (await api(cp, "POST", org(cp, "/audit-encryption-keys"), { name: "security", public_key: customer })).json;
  const settings = (await api(cp, "PATCH", org(cp, "/settings"), { escrow_enabled: true })).json;
  expect(settings.escrow_active).toBe(true);

  // The escrow key is listed, marked as escrow.
  const listed = await svc(cp, ["audit", "keys", "list", "--json"], { home });
  expect(listed.code).toBe(0);
  const escrowKey = (JSON.parse(listed.stdout).keys as Array<{ id: string; kind: string; public_key: string; status: string }>).find((k) => k.kind === "escrow")!;
  expect(escrowKey).toMatchObject({ public_key: settings.escrow_recipient, status: "active" });
  expect((await svc(cp, ["audit", "keys", "list"], { home })).stdout).toMatch(new RegExp(`${escrowKey.id}\\s+escrow \\(service-held, break-glass\\)\\s+escrow\\s+active`));

  const escrowed = runtimeRecord(runtime, { args_digest: null, digest_key_id: null, recipient_key_ids: [key.id, escrowKey.id], ciphertext: await sealed([customer, escrowKey.public_key]) });
  const customerOnly = runtimeRecord(runtime, { args_digest: null, digest_key_id: null, recipient_key_ids: [key.id], ciphertext: await sealed([customer]) });
  expect((await api(cp, "POST", "/runtime/audit-records", { records: [escrowed, customerOnly] }, runtime.token)).json.inserted).toBe(2);

  // A record not encrypted to escrow is refused, naming why.
  const refused = await svc(cp, ["audit", "recover", "request", customerOnly.id, "--reason", "incident 4711"], { home });
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("is not encrypted to the escrow key");
  expect(refused.stderr).toContain("record_not_escrowed");

  const requested = await svc(cp, ["audit", "recover", "request", escrowed.id, "--reason", "incident 4711: customer lost its identity", "--json"], { home });
  expect(requested.stderr).toBe("");
  expect(requested.code).toBe(0);
  const id = JSON.parse(requested.stdout).id as string;
  expect(id).toMatch(/^rrq_/);

  // The requester alone: approval refused, nothing to fetch.
  const self = await svc(cp, ["audit", "recover", "approve", id], { home });
  expect(self.code).toBe(1);
  expect(self.stderr).toContain("cannot approve it");
  expect(self.stderr).toContain("recovery_self_approval");
  const early = await svc(cp, ["audit", "recover", "fetch", id, "--stdout"], { home });
  expect(early.code).toBe(1);
  expect(early.stderr).toContain("recovery_not_approved");
  expect(early.stdout).toBe("");

  const approved = await svc(cp, ["audit", "recover", "approve", id], { home, env: { SVC_TOKEN: secondToken } });
  expect(approved.stderr).toBe("");
  expect(approved.code).toBe(0);
  // The approver cannot fetch: only the requester.
  expect((await svc(cp, ["audit", "recover", "fetch", id, "--stdout"], { home, env: { SVC_TOKEN: secondToken } })).code).toBe(1);

  const outFile = join(home, "recovered.json");
  const fetched = await svc(cp, ["audit", "recover", "fetch", id, "--out", outFile], { home });
  expect(fetched.code).toBe(0);
  expect(JSON.parse(readFileSync(outFile, "utf8"))).toEqual({ arguments: { account: SECRET }, payload: null });
  expect(statSync(outFile).mode & 0o777).toBe(0o600);
  expect(fetched.stdout + fetched.stderr).not.toContain(SECRET);

  const again = await svc(cp, ["audit", "recover", "fetch", id, "--out", join(home, "again.json")], { home });
  expect(again.code).toBe(1);
  expect(again.stderr).toContain("recovery_consumed");
  expect(existsSync(join(home, "again.json"))).toBe(false);

  // All three events, in the audit trail under kind admin (with the admin trail's others).
  const events = await svc(cp, ["audit", "list", "--kind", "admin", "--action", "audit:recovery.*", "--json"], { home });
  expect(events.code).toBe(0);
  const records = JSON.parse(events.stdout).records as Array<{ action: string; ref: string; kind: string; reason: string }>;
  expect(records.map((r) => r.action)).toEqual(["audit:recovery.decrypt", "audit:recovery.approve", "audit:recovery.request"]);
  for (const r of records) expect(r).toMatchObject({ kind: "admin", ref: escrowed.id });
  expect(records[1]!.reason).toContain("second.admin@example.com");
  expect(events.stdout).not.toContain(SECRET);
  const all = await svc(cp, ["audit", "list", "--kind", "admin", "--limit", "500", "--json"], { home });
  expect(all.stdout).not.toContain(SECRET);
  const listedRequests = await svc(cp, ["audit", "recover", "list"], { home });
  expect(listedRequests.stdout).toMatch(new RegExp(`${id}\\s+${escrowed.id}\\s+consumed\\s+owner@example.com\\s+second.admin@example.com`));

  // The events are chained: a checkpoint covers them and verify passes.
  expect((await api(cp, "POST", org(cp, "/audit-checkpoints"))).status).toBe(201);
  const verified = await svc(cp, ["audit", "verify", "--json"], { home });
  expect(verified.code).toBe(0);
  // (every admin event is in the chain: the three steps, and the setup's and refusals' before them)
  const chained = JSON.parse(all.stdout).records.length as number;
  expect(chained).toBeGreaterThan(3);
  expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, covered: chained });
  expect(cp.logs()).not.toContain(SECRET);
});
