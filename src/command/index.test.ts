import { describe, expect, test } from "bun:test";
import { command, jsonError, runCommandTree, trailingCode } from "./index.ts";

describe("runCommandTree", () => {
  const leaf = command({ meta: { name: "leaf" }, args: { name: { type: "string", required: true } }, examples: ["t g leaf --name x"], run() {} });
  const root = command({ meta: { name: "t" }, subCommands: { g: command({ meta: { name: "g" }, subCommands: { leaf } }) } });

  test("exit codes: 0 ok, 2 usage", async () => {
    expect(await runCommandTree(root, ["g", "leaf", "--name", "x"], "t")).toBe(0);
    expect(await runCommandTree(root, ["g", "leaf"], "t")).toBe(2);
    expect(await runCommandTree(root, ["g"], "t")).toBe(2);
    expect(await runCommandTree(root, ["g", "nope"], "t")).toBe(2);
    expect(await runCommandTree(root, ["g", "leaf", "--name", "x", "--extra"], "t")).toBe(2);
  });
});

describe("errors under --json", () => {
  test("a failure's code: its own, else the '(code)' its sentence ends with", () => {
    expect(trailingCode("svc x: no such thing; check it (not_found)")).toBe("not_found");
    expect(trailingCode("svc x: refused (svc.denied)\n")).toBe("svc.denied");
    expect(trailingCode("svc x: cannot read the file (it is gone)")).toBeNull();
    expect(JSON.parse(jsonError({ message: "m", code: "c", exitCode: 1, status: 404 }))).toEqual({ error: { code: "c", message: "m", exit_code: 1, status: 404 } });
  });
});
