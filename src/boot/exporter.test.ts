// The manifest export as a process: a stand-in svc_chatui.boot (real python3) that behaves as
// SVC_TEST_EXPORT says, so the run's limits are seen without Open WebUI or a real pack.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXPORT_OUTPUT_LIMIT, PackError, exportManifest } from "./exporter.ts";
import { alive } from "../../test/support/processes.ts";

const root = mkdtempSync(join(tmpdir(), "svc-exporter-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(join(root, "svc_chatui"));
writeFileSync(join(root, "svc_chatui", "__init__.py"), "");
writeFileSync(
  join(root, "svc_chatui", "boot.py"),
  `import json, os, sys, time
mode = os.environ.get("SVC_TEST_EXPORT", "ok")
if mode == "hang":
    open(os.environ["SVC_TEST_PIDFILE"], "w").write(str(os.getpid()))
    time.sleep(600)
if mode == "flood":
    chunk = "x" * 65536
    while True:
        sys.stdout.write(chunk)
if mode == "big":
    tools = [{"name": "t%d.x" % i, "access": "read", "required_capabilities": ["c" * 200]} for i in range(10000)]
    print(json.dumps({"tools": tools}))
    sys.exit(0)
if mode == "fail":
    sys.stderr.write("warning: a pack warned\\nacme_tools: entry crm.update has no access\\n")
    sys.exit(2)
sys.stderr.write("warning: a pack warned\\n")
name = "token.seen" if "SVC_RUNTIME_TOKEN" in os.environ else "crm.update"
print(json.dumps({"tools": [{"name": name, "access": "write", "required_capabilities": []}]}))
`,
);

const run = async (mode: string, extra: Record<string, string> = {}, limits: { timeoutMs?: number; outputLimit?: number } = {}) =>
  exportManifest({ python: "python3", pythonPath: root, packs: ["acme_tools"], env: { PATH: process.env.PATH, SVC_TEST_EXPORT: mode, ...extra }, ...limits });

async function refusal(p: Promise<unknown>): Promise<PackError> {
  const e = await p.then(() => null).catch((err: unknown) => err);
  expect(e).toBeInstanceOf(PackError);
  return e as PackError;
}

describe("the manifest export", () => {
  test("the manifest and its warnings, in exactly the environment given (not ours: no runtime token)", async () => {
    process.env.SVC_RUNTIME_TOKEN = "svc_rt_secret";
    try {
      const r = await run("ok");
      expect(r).toEqual({ manifest: { tools: [{ name: "crm.update", access: "write", required_capabilities: [] }] }, warnings: ["a pack warned"] });
    } finally {
      delete process.env.SVC_RUNTIME_TOKEN;
    }
  });

  test("a failing export is refused with its last error line, warnings aside", async () => {
    expect((await refusal(run("fail"))).message).toBe("acme_tools: entry crm.update has no access");
  });

  test("an export that blocks is stopped at the timeout and named; its process is gone", async () => {
    const pidfile = join(root, "hang.pid");
    const started = Date.now();
    const e = await refusal(run("hang", { SVC_TEST_PIDFILE: pidfile }, { timeoutMs: 1000 }));
    expect(e.message).toBe("the manifest export gave no result within 1 s and was stopped; a pack may block while it is imported");
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(alive(Number(await Bun.file(pidfile).text()))).toBe(false);
  });

  test("an export that prints without end is cut at the limit", async () => {
    const e = await refusal(run("flood"));
    expect(e.message).toBe(`the manifest export printed more than ${EXPORT_OUTPUT_LIMIT / 1024 / 1024} MiB and was stopped`);
  });

  test("the limit holds for an export that ends: 2 MiB of manifest against a 1 MiB limit", async () => {
    const e = await refusal(run("big", {}, { outputLimit: 1024 * 1024 }));
    expect(e.message).toBe("the manifest export printed more than 1 MiB and was stopped");
  });

  test("an export does not outlive the svc that started it (SIGTERM to svc)", async () => {
    const pidfile = join(root, "orphan.pid");
    const script = `
      import { exportManifest } from ${JSON.stringify(join(import.meta.dir, "exporter.ts"))};
      void exportManifest({ python: "python3", pythonPath: ${JSON.stringify(root)}, packs: ["acme_tools"], env: { PATH: process.env.PATH, SVC_TEST_EXPORT: "hang", SVC_TEST_PIDFILE: ${JSON.stringify(pidfile)} } });
      setInterval(() => {}, 1000);`;
    const svc = Bun.spawn([process.execPath, "-e", script], { cwd: join(import.meta.dir, "../.."), stdout: "ignore", stderr: "inherit" });
    let pid = 0;
    for (let i = 0; i < 100 && !pid; i++) {
      await Bun.sleep(100);
      pid = Number((await Bun.file(pidfile).exists()) ? await Bun.file(pidfile).text() : 0);
    }
    expect(alive(pid)).toBe(true);
    svc.kill("SIGTERM");
    await svc.exited;
    for (let i = 0; i < 50 && alive(pid); i++) await Bun.sleep(100);
    expect(alive(pid)).toBe(false);
  }, 20_000);

  test("a python that cannot be run is named with SVC_CHATUI_PYTHON", async () => {
    const e = await refusal(exportManifest({ python: "/nonexistent/python3", pythonPath: root, packs: ["acme_tools"], env: { PATH: process.env.PATH } }));
    expect(e.message).toStartWith(`cannot run the front end's python "/nonexistent/python3" (SVC_CHATUI_PYTHON): `);
  });
});
