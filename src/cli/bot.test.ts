import { expect, test } from "bun:test";
import { credentialTerminalRefusal } from "./bot.ts";

test("the runtime token is refused for a terminal and allowed for a pipe or file", () => {
  const m = credentialTerminalRefusal(true)!;
  expect(m).toStartWith("svc bot credential: refusing to write the runtime token to a terminal");
  expect(m).toContain("pipe it to a secret manager");
  expect(credentialTerminalRefusal(false)).toBeNull();
});
