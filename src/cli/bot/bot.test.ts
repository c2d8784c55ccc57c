import { expect, test } from "bun:test";
import { credentialTerminalRefusal, credentialWriteFailure, stdoutKind } from "./bot.ts";

test("the runtime token goes only to a pipe or a file", () => {
  const m = credentialTerminalRefusal("terminal")!;
  expect(m).toStartWith("svc bot credential: refusing to write the runtime token to a terminal");
  expect(m).toContain("pipe it to a secret manager");
  expect(credentialTerminalRefusal("device")).toContain("a device such as /dev/null, where it would be lost");
  expect(credentialTerminalRefusal("closed")).toContain("stdout is closed");
  expect(credentialTerminalRefusal("pipe")).toBeNull();
  expect(credentialTerminalRefusal("file")).toBeNull();
  expect(credentialTerminalRefusal(true)).toBe(m);
  expect(credentialTerminalRefusal(false)).toBeNull();
});

test("a failed write says the token is lost and how to get a new one", () => {
  expect(credentialWriteFailure("inst_1", "default", "EPIPE")).toBe(
    "svc bot credential: the runtime token of inst_1 was issued but could not be written to stdout (EPIPE) and is not shown again; run `svc bot credential --installation inst_1 --workspace default --rotate` into a working pipe or file",
  );
});

test("stdoutKind tells a closed descriptor from a device", () => {
  expect(stdoutKind(987654)).toBe("closed");
});
