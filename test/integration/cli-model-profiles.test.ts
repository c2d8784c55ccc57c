// svc model-profiles create|list|assignment|readiness|assign against a real control plane. With
// api_key the key is read from stdin, sealed to the scope's runtimes and only ciphertext is sent.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Decrypter } from "age-encryption";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { api, bootstrapRuntime, createAgent, createInstallation, filesHolding, org, svc } from "./cli-support.ts";

let cp: ControlPlaneProcess;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

const createArgs = (name: string, auth: string, extra: string[] = []) => [
  "model-profiles",
  "create",
  "--display-name",
  name,
  "--endpoint",
  "https://llm.example.com/v1",
  "--auth-type",
  auth,
  "--default-model",
  "m-1",
  "--workspace",
  "default",
  ...extra,
];

test("create --auth-type none --agent creates and assigns", async () => {
  const agent = await createAgent(cp);
  const r = await svc(cp, createArgs("plain", "none", ["--agent", agent, "--json"]));
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const p = JSON.parse(r.stdout);
  expect(p).toMatchObject({ display_name: "plain", auth_type: "none", default_model: "m-1", assigned_to: agent });
  const a = await api(cp, "GET", org(cp, `/model-profile-assignments?workspace=default&agent_id=${agent}`));
  expect(a.json.profile.id).toBe(p.id);
  const shown = await svc(cp, ["model-profiles", "assignment", "--workspace", "default", "--agent", agent]);
  expect(shown.code).toBe(0);
  expect(shown.stdout).toContain(`uses model profile ${p.id} (plain)`);
});

test.each(["none", "api_key"])("--auth-type %s with an unknown --agent: refused before anything is created", async (auth) => {
  const name = `ghost-agent-${auth}`;
  const r = await svc(cp, createArgs(name, auth, ["--agent", "agt_00000000000000000000000000"]), { stdin: "sk-never-read\n" });
  expect(r.code).toBe(1);
  expect(r.stdout).toBe("");
  expect(r.stderr.trim()).toMatch(/^svc model-profiles create: .*agt_00000000000000000000000000.* \((agent_not_found|not_found)\)$/);
  expect(r.stderr).not.toContain("can receive the API key");
  const list = await api(cp, "GET", org(cp, "/model-profiles?workspace=default"));
  expect(list.json.model_profiles.map((p: { display_name: string }) => p.display_name)).not.toContain(name);
});

test("api_key with no runtime in the scope is refused before reading the key; nothing is created", async () => {
  const agent = await createAgent(cp);
  await createInstallation(cp, agent); // an installation with no runtime started yet
  const r = await svc(cp, createArgs("nokey", "api_key", ["--agent", agent]), { stdin: "sk-never-sent\n" });
  expect(r.code).toBe(1);
  expect(r.stdout).toBe("");
  expect(r.stderr.trim()).toMatch(/^svc model-profiles create: no runtime in workspace default \(agent agt_\w+\) can receive the API key.*start a runtime.*\(no_runtime_recipient\)$/);
  const list = await api(cp, "GET", org(cp, "/model-profiles?workspace=default"));
  expect(list.json.model_profiles.map((p: { display_name: string }) => p.display_name)).not.toContain("nokey");
});

test("api_key is sealed to every runtime of the scope; only ciphertext reaches the control plane", async () => {
  const agent = await createAgent(cp);
  const inst = await createInstallation(cp, agent);
  const rt1 = await bootstrapRuntime(cp, inst.id);
  const key = `sk-test-${crypto.randomUUID()}`;
  const r = await svc(cp, createArgs("sealed", "api_key", ["--agent", agent, "--json"]), { stdin: `${key}\n` });
  expect(r.code).toBe(0);
  const p = JSON.parse(r.stdout);
  expect(p.has_api_key).toBe(true);
  expect(p.sealed_to).toEqual([rt1.replica]);
  expect(r.stdout + r.stderr).not.toContain(key);

  // The runtime's bundle carries the sealed key; the replica's own identity opens it.
  const bundle = await api(cp, "GET", "/runtime/policy-bundle?version=1", undefined, rt1.token);
  expect(bundle.status).toBe(200);
  const sealed = Buffer.from(bundle.json.model_profile.api_key_sealed, "base64");
  const d = new Decrypter();
  d.addIdentity(rt1.identity);
  expect(await d.decrypt(sealed, "text")).toBe(key);

  // The control plane's files never held the key in plain text.
  expect(filesHolding(cp.dataDir, key)).toEqual([]);
});

test("api_key with an empty stdin, or more than one line: exit 2, and nothing is created", async () => {
  const agent = await createAgent(cp);
  const inst = await createInstallation(cp, agent);
  await bootstrapRuntime(cp, inst.id);
  const empty = await svc(cp, createArgs("empty-key", "api_key", ["--agent", agent]), { stdin: "\n" });
  expect(empty.code).toBe(2);
  expect(empty.stdout).toBe("");
  expect(empty.stderr).toStartWith(
    'svc model-profiles create: --auth-type api_key reads the API key from stdin, but stdin is empty; pipe it in, e.g. `printf %s "$KEY" | svc model-profiles create … --auth-type api_key`\nUsage: svc model-profiles create ',
  );
  const twoLines = await svc(cp, createArgs("two-lines", "api_key", ["--agent", agent]), { stdin: "sk-one\nsk-two\n" });
  expect(twoLines.code).toBe(2);
  expect(twoLines.stderr).toStartWith("svc model-profiles create: stdin holds more than one line; pipe only the API key, on one line\n");
  expect(twoLines.stderr).not.toContain("sk-one");
  const list = await api(cp, "GET", org(cp, "/model-profiles?workspace=default"));
  const names = list.json.model_profiles.map((p: { display_name: string }) => p.display_name);
  expect(names).not.toContain("empty-key");
  expect(names).not.toContain("two-lines");
});

test("api_key with two replicas seals to both", async () => {
  const agent = await createAgent(cp);
  const inst = await createInstallation(cp, agent);
  const a = await bootstrapRuntime(cp, inst.id);
  const b = await bootstrapRuntime(cp, inst.id);
  const r = await svc(cp, createArgs("two", "api_key", ["--agent", agent, "--json"]), { stdin: "sk-two" });
  expect(r.code).toBe(0);
  expect(new Set(JSON.parse(r.stdout).sealed_to)).toEqual(new Set([a.replica, b.replica]));
  expect(r.stderr).toContain("Sealed the API key to 2 runtime replica(s)");
});

test.each([
  ["http://llm.example.com/v1", "endpoint_not_https"],
  ["https://user:s3cret@llm.example.com/v1", "endpoint_has_credentials"],
  ["https://llm.example.com/v1?key=abc", "endpoint_has_query"],
  ["https://llm.example.com/v1#frag", "endpoint_has_fragment"],
  ["llm.example.com/v1", "invalid_endpoint"],
])("endpoint %s is refused before any call or stdin read, in the control plane's words (%s)", async (endpoint, code) => {
  // What the control plane itself answers for this endpoint.
  const server = await api(cp, "POST", org(cp, "/model-profiles"), { display_name: "x", endpoint, auth_type: "none", default_model: "m", workspace: "default" });
  expect(server.status).toBe(422);
  expect(server.json.code).toBe(code);
  // The CLI, with a control plane that answers nothing and an API key on stdin.
  const args = ["model-profiles", "create", "--display-name", "x", "--endpoint", endpoint, "--auth-type", "api_key", "--default-model", "m", "--workspace", "default"];
  const r = await svc(null, args, { env: { SVC_CONTROL_PLANE_URL: "http://127.0.0.1:1", SVC_TOKEN: "svc_at_x" }, stdin: "sk-never-read\n" });
  expect(r.code).toBe(2);
  expect(r.stdout).toBe("");
  const line = r.stderr.split("\n")[0]!;
  expect(line).toStartWith(`svc model-profiles create: ${server.json.detail}`);
  expect(line).toEndWith(`(${code})`);
  expect(r.stderr).toContain("\nUsage: svc model-profiles create ");
  expect(r.stderr).not.toContain("s3cret");
  expect(r.stderr).not.toContain("sk-never-read");
});

test("list, assign by display name, assignment, readiness", async () => {
  const agent = await createAgent(cp);
  const created = JSON.parse((await svc(cp, createArgs("later", "none", ["--json"]))).stdout);
  const list = await svc(cp, ["model-profiles", "list", "--workspace", "default"]);
  expect(list.stdout).toMatch(/^ID\s+NAME\s+ENDPOINT\s+AUTH\s+DEFAULT MODEL/);
  expect(list.stdout).toContain(created.id);

  const none = await svc(cp, ["model-profiles", "assignment", "--workspace", "default", "--agent", agent]);
  expect(none.code).toBe(0);
  expect(none.stdout).toContain("has no model profile");
  expect(JSON.parse((await svc(cp, ["model-profiles", "assignment", "--workspace", "default", "--agent", agent, "--json"])).stdout).profile).toBeNull();

  const notReady = await svc(cp, ["model-profiles", "readiness", created.id, "--workspace", "default"]);
  expect(notReady.code).toBe(1);
  expect(notReady.stdout).toMatch(/CHECK\s+OK\s+DETAIL/);
  expect(notReady.stderr.trim()).toMatch(/is not ready \(failed: .+\).*\(not_ready\)$/);

  const assigned = await svc(cp, ["model-profiles", "assign", "later", "--workspace", "default", "--agent", agent]);
  expect(assigned.code).toBe(0);
  expect(assigned.stdout).toContain(`Assigned model profile ${created.id} (later) to agent ${agent}`);
  const a = await api(cp, "GET", org(cp, `/model-profile-assignments?workspace=default&agent_id=${agent}`));
  expect(a.json.profile.id).toBe(created.id);

  const readyJson = await svc(cp, ["model-profiles", "readiness", "later", "--workspace", "default", "--json"]);
  const rj = JSON.parse(readyJson.stdout);
  expect(rj.profile_id).toBe(created.id);
  expect(Array.isArray(rj.checks)).toBe(true);
  expect(readyJson.code).toBe(rj.ready ? 0 : 1);
});

test("an unknown profile is named", async () => {
  const r = await svc(cp, ["model-profiles", "assign", "ghost", "--workspace", "default", "--agent", "agt_x"]);
  expect(r.code).toBe(1);
  expect(r.stderr.trim()).toMatch(/no model profile "ghost" in workspace default.*\(not_found\)$/);
});
