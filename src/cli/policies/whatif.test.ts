// `svc policies test` decides with the proxy's own code: a property test over randomized
// bundles and calls compares what whatIf() says with what a running proxy daemon answers on
// /v1/tools/decide for the same bundle and call (same user id, tool, arguments).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BundlePolicy, PolicyBundle } from "../../contract/bundle.ts";
import type { Logger } from "../../log/index.ts";
import { loadConfig } from "../../proxy/config.ts";
import { type Daemon, startDaemon } from "../../proxy/daemon.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "../../proxy/testing/bundle.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "../../proxy/testing/fake-control-plane.ts";
import { callerFor, parseArgsFlag, report, whatIf } from "./whatif.ts";
import { seededRandom } from "../../../test/support/seeded-random.ts";

const TOKEN = "svc_rt_whatif_token";
const quiet: Logger = { info() {}, warn() {}, error() {} };

const rng = seededRandom;

const TOOLS = ["crm.read", "crm.update", "crm.credit"];
const SOURCES = ["*", "user:usr_alice", "user:usr_bob", "group:sales", "group:staff", "user:inst_1"]; // inst_1: the bundle's installation (no user: decided as the installation)
const CONDITIONS = [
  null,
  null,
  "args.n > 3",
  "args.n + 1 > 2",
  "args.s == 'x'",
  "'sales' in user.groups",
  "user.attributes.source == 'directory'",
  "user.email.endsWith('@example.com')",
  "now.getFullYear() > 2000",
  "size(args) == 0",
  "args.flag",
];
const USERS = ["fe-alice", "fe-bob", "fe-carol", "fe-stranger", null];

function randomBundle(r: ReturnType<typeof rng>, revision: number): PolicyBundle {
  const policies: BundlePolicy[] = [];
  const n = 1 + Math.floor(r.next() * 8);
  for (let i = 0; i < n; i++) {
    const condition = r.pick(CONDITIONS);
    policies.push({
      id: `pol_${String(i).padStart(3, "0")}`,
      name: `p${i}`,
      src: r.pick(SOURCES),
      dst: r.next() < 0.1 ? "tool:mail.send" : `tool:${r.pick(TOOLS)}`,
      effect: r.next() < 0.3 ? "deny" : "permit",
      ...(condition ? { condition } : {}),
      ...(r.next() < 0.2 ? { mode: "shadow" as const } : {}),
    });
  }
  return fakeBundle({
    version: 2,
    revision,
    tools: TOOLS.map((name) => bundleTool(name, "write")),
    policies,
    identities: [
      bundleIdentity("alice", ["sales", "staff"], { attributes: { source: "directory" } }),
      bundleIdentity("bob", ["staff"], { email: "bob@elsewhere.org", attributes: { source: "manual" } }),
      bundleIdentity("carol"),
    ],
  });
}

function randomArgs(r: ReturnType<typeof rng>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (r.next() < 0.7) out.n = r.pick([0, 1, 3, 4, 100, 2.5, -1, "4"]);
  if (r.next() < 0.5) out.s = r.pick(["x", "y", 1]);
  if (r.next() < 0.3) out.flag = r.pick([true, false, "yes"]);
  return out;
}

let dir: string;
let cp: FakeControlPlane;
let daemon: Daemon;
let socket: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "svc-whatif-"));
  cp = startFakeControlPlane(randomBundle(rng(1), 1), TOKEN);
  socket = join(dir, "p.sock");
  daemon = await startDaemon(loadConfig(daemonEnv(cp, dir, { SVC_PROXY_BUNDLE_VERSION: "2" })), quiet);
  for (let i = 0; i < 400; i++) {
    const res = await fetch("http://localhost/readyz", { unix: socket } as RequestInit).catch(() => null);
    if (res?.status === 200) break;
    await Bun.sleep(25);
  }
});

afterAll(async () => {
  await daemon.shutdown(1000);
  await cp.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("svc policies test", () => {
  test("property: on randomized bundles and calls, whatIf gives the proxy's real decision, code and message", async () => {
    let compared = 0;
    const kinds = new Set<string>();
    for (let seed = 1; seed <= 25; seed++) {
      const r = rng(seed);
      const bundle = randomBundle(r, cp.bundle.revision + 1);
      cp.bundle = bundle;
      await daemon.loop.pollNow();
      for (let i = 0; i < 20; i++) {
        const user = r.pick(USERS);
        const tool = r.next() < 0.1 ? "mail.send" : r.pick(TOOLS);
        const args = randomArgs(r);
        const res = await fetch("http://localhost/v1/tools/decide", {
          unix: socket,
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ tool, user: user ? { id: user } : null, args }),
        } as RequestInit);
        const real = (await res.json()) as { decision: "permit" | "deny"; code?: string; message?: string };
        const caller = user === null ? ({ kind: "installation" } as const) : ({ kind: "linked", remoteUserId: user, userId: "" } as const);
        const predicted = report(bundle, caller, whatIf(bundle, caller, tool, { args, now: new Date() }));
        const where = `seed ${seed} call ${i}: ${user} ${tool} ${JSON.stringify(args)}`;
        expect({ where, decision: predicted.decision, code: predicted.code ?? undefined, message: predicted.message ?? undefined }).toEqual({
          where,
          decision: real.decision,
          code: real.code,
          message: real.message,
        });
        kinds.add(`${predicted.decision}:${predicted.code ?? ""}:${predicted.message?.includes("could not evaluate") ? "error" : ""}`);
        compared++;
      }
    }
    expect(compared).toBe(500);
    // The random calls reach every kind of answer: permit, plain deny, condition error, unregistered, unlinked.
    expect([...kinds].sort()).toEqual(expect.arrayContaining(["permit::", "deny:svc.denied:", "deny:svc.denied:error", "deny:tool_not_registered:", "deny:identity.unlinked:"]));
  }, 120_000);

  test("a user not linked in the installation is decided from the directory, and the report says so", () => {
    const bundle = randomBundle(rng(3), 1);
    bundle.policies = [{ id: "pol_g", name: "sales credit", src: "group:sales", dst: "tool:crm.credit", effect: "permit", condition: "args.n <= 5" }];
    const dave = callerFor(bundle, { id: "usr_dave", email: "dave@example.com", display_name: null, source: "directory", groups: ["sales"] });
    expect(dave.kind).toBe("directory");
    expect(report(bundle, dave, whatIf(bundle, dave, "crm.credit", { args: { n: 5 }, now: new Date() }))).toMatchObject({
      decision: "permit",
      policy: { id: "pol_g", name: "sales credit" },
      not_linked: true,
    });
    expect(whatIf(bundle, dave, "crm.credit", { args: { n: 6 }, now: new Date() }).decision).toBe("deny");
    const alice = callerFor(bundle, { id: "usr_alice", email: "alice@example.com", display_name: null, source: "directory", groups: [] });
    expect(alice).toEqual({ kind: "linked", remoteUserId: "fe-alice", userId: "usr_alice" });
  });

  test("--args must be a JSON object", () => {
    expect(parseArgsFlag(undefined)).toEqual({});
    expect(parseArgsFlag('{"amount": 200}')).toEqual({ amount: 200 });
    expect(() => parseArgsFlag("[1]")).toThrow("--args must be a JSON object");
    expect(() => parseArgsFlag("{amount")).toThrow("--args is not JSON");
  });
});
