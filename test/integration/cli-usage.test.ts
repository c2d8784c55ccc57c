// Every admin command's --help has an example; usage mistakes exit 2; local refusals exit 1
// with one sentence. No control plane is needed for these.
import { describe, expect, test } from "bun:test";
import { svc } from "./cli-support.ts";

const LEAVES = [
  ["login"],
  ["bot", "init"],
  ["bot", "list"],
  ["bot", "status"],
  ["bot", "agents", "list"],
  ["bot", "credential"],
  ["model-profiles", "create"],
  ["model-profiles", "list"],
  ["model-profiles", "assignment"],
  ["model-profiles", "readiness"],
  ["model-profiles", "assign"],
  ["policies", "create"],
  ["policies", "list"],
  ["users", "resolve"],
  ["users", "remote-identities", "list"],
  ["audit", "keys", "create"],
  ["audit", "keys", "list"],
  ["audit", "keys", "disable"],
  ["audit", "decrypt"],
  ["harness", "sync"],
];

describe("--help", () => {
  test.each(LEAVES)("svc %s … --help shows usage and an example of itself", async (...path) => {
    const r = await svc(null, [...path, "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`USAGE svc ${path.join(" ")}`);
    expect(r.stdout).toContain("EXAMPLES");
    expect(r.stdout).toContain(`  svc ${path.join(" ")}`);
  });

  test("spec flags appear in help", async () => {
    expect((await svc(null, ["bot", "credential", "--help"])).stdout).toMatch(/--installation[\s\S]*--workspace[\s\S]*--rotate/);
    expect((await svc(null, ["model-profiles", "create", "--help"])).stdout).toMatch(/--display-name[\s\S]*--endpoint[\s\S]*--auth-type[\s\S]*--default-model[\s\S]*--agent[\s\S]*--workspace/);
    expect((await svc(null, ["policies", "create", "--help"])).stdout).toMatch(/--name[\s\S]*--src-pattern[\s\S]*--dst-pattern[\s\S]*--effect[\s\S]*--agent-id[\s\S]*--workspace/);
    expect((await svc(null, ["audit", "decrypt", "--help"])).stdout).toMatch(/--record[\s\S]*--identity[\s\S]*--out[\s\S]*--stdout/);
  });
});

describe("usage errors exit 2", () => {
  test("unknown flag", async () => {
    const r = await svc(null, ["bot", "list", "--bogus"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown flag "--bogus"');
  });

  test("missing required flags", async () => {
    for (const args of [
      ["bot", "init", "--platform", "chatui", "--name", "x", "--agent", "agt_1"],
      ["bot", "credential", "--installation", "inst_1"],
      ["model-profiles", "assign", "mp_1", "--workspace", "default"],
      ["policies", "create", "--name", "x", "--src-pattern", "*", "--dst-pattern", "model:invoke", "--effect", "permit"],
      ["users", "resolve"],
      ["harness", "sync", "--harness", "chatui"],
    ]) {
      const r = await svc(null, args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toContain("Missing required argument");
    }
  });

  test("missing positional", async () => {
    const r = await svc(null, ["model-profiles", "readiness", "--workspace", "default"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("PROFILE");
  });

  test("audit decrypt with neither --out nor --stdout", async () => {
    const r = await svc(null, ["audit", "decrypt", "--record", "rec_1", "--identity", "/nonexistent"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--out <file> or --stdout");
  });

  test("audit decrypt with both", async () => {
    const r = await svc(null, ["audit", "decrypt", "--record", "rec_1", "--identity", "/x", "--out", "/tmp/x", "--stdout"]);
    expect(r.code).toBe(2);
  });

  test("bad enum values", async () => {
    expect((await svc(null, ["harness", "sync", "--harness", "slack", "--url", "http://x"])).code).toBe(2);
    expect((await svc(null, ["policies", "create", "--name", "x", "--src-pattern", "*", "--dst-pattern", "model:invoke", "--effect", "allow", "--workspace", "d"])).code).toBe(2);
    expect((await svc(null, ["model-profiles", "create", "--display-name", "x", "--endpoint", "https://a", "--auth-type", "token", "--default-model", "m", "--workspace", "d"])).code).toBe(2);
  });
});

describe("local refusals exit 1 with one sentence", () => {
  test("unsupported platform names the code", async () => {
    const r = await svc(null, ["bot", "init", "--platform", "slack", "--name", "x", "--agent", "agt_1", "--workspace", "default"]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe('svc bot init: platform "slack" is not supported; use --platform chatui (invalid_platform)');
  });

  test("not signed in says to run svc login", async () => {
    const r = await svc(null, ["bot", "list"]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe("svc bot list: not signed in; run `svc login --url <control-plane-url>` (or set SVC_CONTROL_PLANE_URL and SVC_TOKEN)");
  });

  test("a bad src pattern is named before anything is sent", async () => {
    // No control plane exists at this URL: the refusal must come from local validation.
    const env = { SVC_CONTROL_PLANE_URL: "http://127.0.0.1:1", SVC_TOKEN: "svc_at_x" };
    const r = await svc(null, ["policies", "create", "--name", "x", "--src-pattern", "usr:alice", "--dst-pattern", "model:invoke", "--effect", "permit", "--workspace", "default"], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('src-pattern "usr:alice": unknown kind "usr"');
    expect(r.stderr.trim()).toEndWith("(invalid_pattern)");
    const d = await svc(null, ["policies", "create", "--name", "x", "--src-pattern", "*", "--dst-pattern", "tool:two words", "--effect", "permit", "--workspace", "default"], { env });
    expect(d.code).toBe(1);
    expect(d.stderr).toContain('dst-pattern "tool:two words": tool name "two words"');
  });

  test("an unreachable control plane is named", async () => {
    const r = await svc(null, ["bot", "list"], { env: { SVC_CONTROL_PLANE_URL: "http://127.0.0.1:1", SVC_TOKEN: "svc_at_x" } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("cannot reach the control plane at http://127.0.0.1:1");
  });
});
