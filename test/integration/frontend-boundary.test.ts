// What code running as the front end's UID (10001, e.g. an Open WebUI admin's Function) can get
// from a real `svc proxy serve` of the same UID (issue 27, docs/frontend-boundary.md): not its
// environment, memory or open files (PR_SET_DUMPABLE 0), not the runtime token or the digest key
// from its state directory (sealed), and at the control plane nothing with the front end's
// credential of the boot. That credential and the runtime token both work on the socket.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { type ControlPlaneProcess, cleanup, collectOutput, startControlPlane, svcCommand } from "../support/controlplane-process.ts";
import { addPolicy, adminApi, type Api, type Scenario, setUpScenario, waitFor } from "../../src/proxy/testing/integration.ts";
import { filesHolding } from "./cli-support.ts";
import { AS_CONTAINER_USER, stateDir } from "./supervisor-helpers.ts";

setDefaultTimeout(60_000);
const FRONTEND_TOKEN = `svc_fe_${"b".repeat(43)}`;
let cp: ControlPlaneProcess;
let api: Api;
let s: Scenario;
let proxy: Subprocess;
let output: ReturnType<typeof collectOutput>;
let dir: string;
const socket = () => join(dir, "proxy.sock");

beforeAll(async () => {
  cp = await startControlPlane();
  api = adminApi(cp);
  s = await setUpScenario(api);
  await addPolicy(api, s, "*", "tool:crm.read");
  dir = stateDir("svc-boundary-");
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: dir,
    SVC_RUNTIME_TOKEN: s.runtimeToken,
    SVC_FRONTEND_TOKEN: FRONTEND_TOKEN,
    SVC_RUNTIME_CONTROL_PLANE_URL: cp.url,
    SVC_PROXY_STATE_DIR: join(dir, "proxy"),
    SVC_RUNTIME_SOCKET_PATH: socket(),
    SVC_PROXY_POLL_INTERVAL: "1s",
  };
  proxy = Bun.spawn([...AS_CONTAINER_USER, ...svcCommand(), "proxy", "serve"], { env, stdout: "pipe", stderr: "pipe" });
  output = collectOutput(proxy);
  await waitFor(async () => (await fetch("http://localhost/readyz", { unix: socket() } as RequestInit)).status === 200, `the proxy ready\n${output.text()}`, 20_000);
});

afterAll(async () => {
  proxy?.kill("SIGTERM");
  await proxy?.exited;
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
  if (dir) cleanup(dir);
});

/** Runs a command as UID/GID 10001, as code inside the front end would. */
const asFrontEnd = (argv: string[]) => {
  const r = Bun.spawnSync([...AS_CONTAINER_USER, ...argv], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
};
const onSocket = async (path: string, token: string | null, body?: unknown) =>
  fetch(`http://localhost${path}`, {
    unix: socket(),
    method: body === undefined ? "GET" : "POST",
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  } as RequestInit);

test("a process of the same UID cannot read the proxy's environment, memory or open files", () => {
  const pid = proxy.pid;
  const environ = asFrontEnd(["cat", `/proc/${pid}/environ`]);
  expect(environ.code).not.toBe(0);
  expect(environ.err).toContain("Permission denied");
  expect(environ.out).not.toContain(s.runtimeToken);
  expect(asFrontEnd(["head", "-c", "1", `/proc/${pid}/mem`]).err).toContain("Permission denied");
  expect(asFrontEnd(["ls", `/proc/${pid}/fd`]).err).toContain("Permission denied");
  // the same UID, the same files: the proxy is the one that is private, not the files
  expect(asFrontEnd(["cat", `/proc/self/environ`]).code).toBe(0);
});

test("the state directory holds neither the runtime token nor the digest key, though the front end can read it", async () => {
  const material = (await api("GET", "/api/v1/runtime/digest-key", undefined, s.runtimeToken)).json.key as string;
  expect(material).toBeString();
  const hex = Buffer.from(material, "base64").toString("hex");
  expect(asFrontEnd(["cat", join(dir, "proxy", "bootstrap.json")]).code).toBe(0);
  for (const secret of [s.runtimeToken, material, hex, FRONTEND_TOKEN]) expect(filesHolding(join(dir, "proxy"), secret)).toEqual([]);
});

test("on the socket the front end's credential works as the runtime token does; off the box it is worth nothing", async () => {
  for (const token of [FRONTEND_TOKEN, s.runtimeToken]) {
    expect((await onSocket("/v1/models", token)).status).toBe(200);
    const d = await (await onSocket("/v1/tools/decide", token, { tool: "crm.read", user: { id: s.users.alice!.remote }, args: {} })).json();
    expect(d.decision).toBe("permit");
  }
  // the operator's routes are not the front end's: it cannot replay records set aside
  expect((await onSocket("/v1/spool/replay", FRONTEND_TOKEN, {})).status).toBe(403);
  expect((await onSocket("/v1/spool/replay", s.runtimeToken, {})).status).toBe(200);
  expect((await onSocket("/v1/models", `svc_fe_${"c".repeat(43)}`)).status).toBe(401);
  expect((await onSocket("/v1/models", null)).status).toBe(401);
  for (const path of ["/api/v1/runtime/digest-key", "/api/v1/runtime/policy-bundle?version=1"]) {
    expect((await api("GET", path, undefined, FRONTEND_TOKEN)).status).toBe(401);
  }
});
