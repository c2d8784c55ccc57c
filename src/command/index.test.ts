import { describe, expect, test } from "bun:test";
import { command, runCommandTree } from "./index.ts";

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
