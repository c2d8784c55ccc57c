// Conditions in the running proxy (issue 28), over its real unix socket: a condition no control
// plane of this release accepts (an older one's, a hand-made bundle's) fails closed at once,
// naming its policy in the refusal and the audit; numbers reach the condition and the audit
// exactly as the caller wrote them, and `svc policies test` gives the proxy's answer.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Decrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "../log/index.ts";
import { callerFor, parseArgsFlag, whatIf } from "../cli/policies/whatif.ts";
import { loadConfig } from "./config.ts";
import { type Daemon, startDaemon } from "./daemon.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "./testing/bundle.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "./testing/fake-control-plane.ts";

const TOKEN = "svc_rt_conditions";
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };
let cp: FakeControlPlane;
let daemon: Daemon;
let dir: string;
let identity: string;
let socket: string;

const policies = [
  { id: "pol_nest", name: "nested loops", src: "*", dst: "tool:crm.scan", effect: "permit" as const, condition: "args.l.all(x, args.l.all(y, args.l.all(z, x + y + z >= 0)))" },
  { id: "pol_re", name: "backtracking pattern", src: "*", dst: "tool:crm.find", effect: "permit" as const, condition: "args.q.matches('^(a+)+$')" },
  { id: "pol_amt", name: "small amounts", src: "*", dst: "tool:crm.pay", effect: "permit" as const, condition: "args.amount <= 500" },
  { id: "pol_n", name: "one account", src: "*", dst: "tool:crm.account", effect: "permit" as const, condition: "args.n == 9007199254740993" },
];

const post = async (body: string) =>
  fetch("http://localhost/v1/tools/decide", { unix: socket, method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body } as RequestInit).then(
    async (r) => r.json() as Promise<Record<string, string>>,
  );
const decide = async (tool: string, args: string) => post(`{"tool": "${tool}", "user": {"id": "fe-alice", "email": "alice@example.com"}, "args": ${args}}`);

async function shipped(id: string) {
  for (let i = 0; i < 400 && !cp.audit.has(id); i++) {
    daemon.shipper.wake();
    await Bun.sleep(10);
  }
  return cp.audit.get(id)!;
}

beforeAll(async () => {
  identity = await generateX25519Identity();
  const tools = ["crm.scan", "crm.find", "crm.pay", "crm.account"].map((n) => bundleTool(n));
  cp = startFakeControlPlane(
    fakeBundle({ tools, policies, identities: [bundleIdentity("alice", ["sales"])], recipients: [{ key_id: "key_1", recipient: await identityToRecipient(identity), kind: "customer" }] }),
    TOKEN,
  );
  dir = mkdtempSync(join(tmpdir(), "svc-cond-"));
  const config = loadConfig(daemonEnv(cp, dir));
  socket = config.socketPath;
  daemon = await startDaemon(config, quiet);
  for (let i = 0; i < 400 && daemon.status.state !== "ready"; i++) await Bun.sleep(25);
});

afterAll(async () => {
  await daemon?.shutdown(1000);
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a condition the control plane would refuse, forced into the bundle", () => {
  test("nested loops over a 400-item list: refused at once, naming the policy, audited as condition_limit", async () => {
    const l = JSON.stringify(Array.from({ length: 400 }, (_, i) => i));
    const [d, ready] = await Promise.all([decide("crm.scan", `{"l": ${l}}`), fetch("http://localhost/readyz", { unix: socket } as RequestInit)]);
    expect(ready.status).toBe(200);
    expect(d).toMatchObject({ decision: "deny", code: "svc.denied" });
    expect(d.message).toStartWith(
      'Refused (svc.denied): policy "nested loops" refused the call: its condition is over svc\'s cost limit (the condition is refused (line 1, column 1: the condition may cost',
    );
    expect(await shipped(d.record_id!)).toMatchObject({ decision: "deny", reason: "condition_limit", policy_id: "pol_nest" });
  });

  test("a backtracking pattern: refused without running, naming the policy", async () => {
    const d = await decide("crm.find", `{"q": "${"a".repeat(26)}b"}`);
    expect(d.message).toContain('policy "backtracking pattern" refused the call');
    expect(d.message).toContain("repeats a repetition ((a+)+)");
    expect(await shipped(d.record_id!)).toMatchObject({ decision: "deny", reason: "condition_limit", policy_id: "pol_re" });
  });
});

describe("numbers exactly", () => {
  test("100.00000000000000000001 under `args.amount <= 500`: the proxy and `svc policies test` both permit", async () => {
    const args = '{"amount": 100.00000000000000000001}';
    expect(await decide("crm.pay", args)).toMatchObject({ decision: "permit" });
    const caller = callerFor(cp.bundle, { id: "usr_alice", email: "alice@example.com", display_name: null, source: "directory", groups: ["sales"] });
    expect(whatIf(cp.bundle, caller, "crm.pay", { args: parseArgsFlag(args), now: new Date() })).toMatchObject({ decision: "permit", policyId: "pol_amt" });
    expect(await decide("crm.pay", '{"amount": 500.00000000000000000001}')).toMatchObject({ decision: "permit" }); // the nearest double is 500
    expect(await decide("crm.pay", '{"amount": 500.0000000000001}')).toMatchObject({ decision: "deny" });
  });

  test("9007199254740993 is that integer in the condition and in the audit", async () => {
    const d = await decide("crm.account", '{"n": 9007199254740993}');
    expect(d).toMatchObject({ decision: "permit" });
    expect(await decide("crm.account", '{"n": 9007199254740992}')).toMatchObject({ decision: "deny" });
    const rec = await shipped(d.record_id!);
    const dec = new Decrypter();
    dec.addIdentity(identity);
    expect(await dec.decrypt(Buffer.from(rec.ciphertext!, "base64"), "text")).toContain('"arguments":{"n":9007199254740993}');
    const caller = callerFor(cp.bundle, { id: "usr_alice", email: "alice@example.com", display_name: null, source: "directory", groups: ["sales"] });
    expect(whatIf(cp.bundle, caller, "crm.account", { args: parseArgsFlag('{"n": 9007199254740993}'), now: new Date() }).decision).toBe("permit");
  });
});
