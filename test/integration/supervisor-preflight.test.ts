// `svc run` preflight: every refusal of spec §7 "Container start failures" is one line and a
// non-zero exit, before any child starts. Runs the real CLI; as root for the UID check, as
// UID 10001 (setpriv) for the others.
import { afterAll, describe, expect, test } from "bun:test";
import { chownSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { svcCommand } from "../support/controlplane-process.ts";
import { AS_CONTAINER_USER, plainLines, spawnCollect, stateDir } from "./supervisor-helpers.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function baseEnv(state: string): Record<string, string> {
  dirs.push(state);
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: state,
    SVC_STATE_DIR: join(state, "state"),
    CHATUI_SECRET_KEY: "s3cret",
    SVC_RUNTIME_TOKEN: "svc_rt_test",
    SVC_RUNTIME_CONTROL_PLANE_URL: "http://127.0.0.1:9",
  };
}

async function svcRun(env: Record<string, string | undefined>, asContainerUser = true) {
  const r = spawnCollect([...(asContainerUser ? AS_CONTAINER_USER : []), ...svcCommand(), "run"], env);
  const code = await r.exit;
  return { code, lines: plainLines(r.stderr()) };
}

describe("svc run preflight", () => {
  test("refuses a container user other than UID 10001 with the state-directory message", async () => {
    expect(process.getuid!()).toBe(0);
    const { code, lines } = await svcRun(baseEnv(stateDir()), false);
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toStartWith("state directory is not a writable directory; refusing to start");
    expect(lines[0]).toContain("this process is UID 0");
  }, 30_000);

  test("refuses a state directory the container user cannot write", async () => {
    const d = mkdtempSync(join(tmpdir(), "svc-rootowned-"));
    dirs.push(d);
    const env = { ...baseEnv(stateDir()), SVC_STATE_DIR: d };
    const { code, lines } = await svcRun(env);
    expect(code).toBe(1);
    expect(lines).toEqual([expect.stringMatching(/^state directory is not a writable directory; refusing to start: .* is not writable by UID 10001/)]);
  }, 30_000);

  test("refuses a state directory that is a file", async () => {
    const s = stateDir();
    const f = join(s, "file");
    writeFileSync(f, "");
    chownSync(f, 10001, 10001);
    const { code, lines } = await svcRun({ ...baseEnv(s), SVC_STATE_DIR: f });
    expect(code).toBe(1);
    expect(lines[0]).toStartWith("state directory is not a writable directory; refusing to start");
    expect(lines[0]).toContain("is not a directory");
  }, 30_000);

  const missing: [string, string][] = [
    ["CHATUI_SECRET_KEY", "secret key not set; refusing to start"],
    ["SVC_RUNTIME_TOKEN", "runtime token not set; refusing to start"],
    ["SVC_RUNTIME_CONTROL_PLANE_URL", "control-plane URL not set; refusing to start"],
  ];
  for (const [name, message] of missing) {
    test(`refuses without ${name}`, async () => {
      const env: Record<string, string | undefined> = baseEnv(stateDir());
      delete env[name];
      const { code, lines } = await svcRun(env);
      expect(code).toBe(1);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toStartWith(message);
      expect(lines[0]).toContain(name);
    }, 30_000);
  }

  test("refuses a control-plane URL that is not a URL", async () => {
    const { code, lines } = await svcRun({ ...baseEnv(stateDir()), SVC_RUNTIME_CONTROL_PLANE_URL: "svc.example.com" });
    expect(code).toBe(1);
    expect(lines[0]).toStartWith("control-plane URL is not valid; refusing to start");
  });

  test("refuses a control-plane URL carrying credentials before the proxy starts, without printing the password", async () => {
    const r = spawnCollect([...AS_CONTAINER_USER, ...svcCommand(), "run"], { ...baseEnv(stateDir()), SVC_RUNTIME_CONTROL_PLANE_URL: "https://svc:hunter2@127.0.0.1:9" });
    expect(await r.exit).toBe(1);
    expect(plainLines(r.stderr())).toEqual([
      'control-plane URL is not valid; refusing to start: SVC_RUNTIME_CONTROL_PLANE_URL "https://svc:***@127.0.0.1:9" carries a user name or password; remove them (SVC_RUNTIME_TOKEN is the only credential sent to the control plane)',
    ]);
    expect(r.stderr()).not.toContain("hunter2");
  }, 30_000);

  test("past preflight, the real svc run starts `svc proxy serve` of its own binary (bootstrap fails against no control plane)", async () => {
    const { code, lines } = await svcRun({ ...baseEnv(stateDir()), SVC_PROXY_READY_TIMEOUT: "10" });
    expect(code).toBe(1);
    expect(lines.at(-1)).toStartWith("runtime bootstrap failed: ");
  }, 30_000);
});
