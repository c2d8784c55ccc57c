import { expect, test } from "bun:test";
import { stdinSecretProblem } from "./stdin-secret.ts";

test("one shape for every secret read from stdin: who reads what, what stdin is, a command that pipes it", () => {
  const token = { reader: "--with-token", what: "the API token", example: 'printf %s "$TOKEN" | svc login --url https://svc.example.com --with-token' };
  expect(stdinSecretProblem(token, "terminal")).toBe(
    '--with-token reads the API token from stdin, but stdin is a terminal; pipe it in, e.g. `printf %s "$TOKEN" | svc login --url https://svc.example.com --with-token`',
  );
  expect(stdinSecretProblem(token, "empty")).toStartWith("--with-token reads the API token from stdin, but stdin is empty; pipe it in, e.g. `printf %s");
});
