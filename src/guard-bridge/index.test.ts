import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PACKAGE_FILES, prependPythonPath, writePythonPackage } from "./index.ts";

const SRC = join(import.meta.dir, "python/svc_chatui");

describe("embedded svc_chatui", () => {
  test("embeds every module of the package folder", () => {
    const onDisk = readdirSync(SRC)
      .filter((f) => f.endsWith(".py"))
      .sort();
    expect(Object.keys(PACKAGE_FILES).sort()).toEqual(onDisk);
  });

  test("writes an importable copy that python can run", () => {
    const root = mkdtempSync(join(tmpdir(), "svc-py-"));
    try {
      writePythonPackage(root);
      writePythonPackage(root); // idempotent: replaces the old copy
      expect(readFileSync(join(root, "svc_chatui/pipe.py"), "utf8")).toBe(PACKAGE_FILES["pipe.py"]!);
      const r = Bun.spawnSync(["python3", "-m", "svc_chatui.boot", "--export-manifest"], {
        env: { ...process.env, PYTHONPATH: root, SVC_CHATUI_TOOL_PACKS: "" },
      });
      expect(r.stderr.toString()).toBe("");
      expect(JSON.parse(r.stdout.toString())).toEqual({ tools: [] });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("prepends to PYTHONPATH", () => {
    expect(prependPythonPath(["/a", "/b"], "/c::/d")).toBe("/a:/b:/c:/d");
    expect(prependPythonPath(["/a"], undefined)).toBe("/a");
  });
});
