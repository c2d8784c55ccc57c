// Issue 20: a client generated from the OpenAPI document (openapi-typescript) type-checks
// against the contract types the CLI and the console import. For every operation of
// admin-api.test.ts's DOCUMENTED list, the generated response body and the contract's Static
// type must each be assignable to the other, so neither the document nor the types the CLI and
// console compile against can drift from what the control plane declares.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import openapiTS, { astToString } from "openapi-typescript";
import { OPENAPI_PATH } from "../controlplane/app.ts";
import { testControlPlane } from "../controlplane/testing.ts";
import { DOCUMENTED } from "./documented-operations.ts";

const root = resolve(import.meta.dir, "../..");

/** The check file: one pair of assignments per documented operation. */
function checks(contractPath: string): string {
  const lines = DOCUMENTED.map(([method, path, status, name], i) => {
    const generated = `Body<${JSON.stringify(path)}, ${JSON.stringify(method)}, ${status}>`;
    return [
      `declare const g${i}: ${generated};`,
      `declare const c${i}: Static<typeof C.${name}>;`,
      `export const toContract${i}: Static<typeof C.${name}> = g${i};`,
      `export const toGenerated${i}: ${generated} = c${i};`,
    ].join("\n");
  });
  return [
    `import type { paths } from "./api";`,
    `import type { Static } from "@sinclair/typebox";`,
    `import type * as C from ${JSON.stringify(contractPath)};`,
    `type Json<R> = R extends { content: { "application/json": infer B } } ? B : never;`,
    `type Body<P extends keyof paths, M extends keyof paths[P], S extends number> = paths[P][M] extends { responses: infer R } ? (S extends keyof R ? Json<R[S]> : never) : never;`,
    ...lines,
  ].join("\n");
}

describe("a client generated from the OpenAPI document", () => {
  test("type-checks both ways against the contract types the CLI and the console use", async () => {
    const cp = await testControlPlane();
    const doc = (await cp.call("GET", OPENAPI_PATH, { token: null })).json;
    const dir = mkdtempSync(join(tmpdir(), "svc-openapi-client-"));
    try {
      writeFileSync(join(dir, "api.d.ts"), astToString(await openapiTS(doc)));
      writeFileSync(join(dir, "check.ts"), checks(join(root, "src/contract/admin-api.ts")));
      writeFileSync(
        join(dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noEmit: true,
            target: "ESNext",
            module: "ESNext",
            moduleResolution: "Bundler",
            allowImportingTsExtensions: true,
            skipLibCheck: true,
            types: [],
            typeRoots: [join(root, "node_modules/@types")],
            baseUrl: root,
            paths: { "*": [join(root, "node_modules/*")] },
          },
          files: ["check.ts"],
        }),
      );
      const tsc = Bun.spawnSync([join(root, "node_modules/.bin/tsc"), "-p", join(dir, "tsconfig.json")], { cwd: dir, stdout: "pipe", stderr: "pipe" });
      const out = `${tsc.stdout.toString()}${tsc.stderr.toString()}`;
      expect({
        exit: tsc.exitCode,
        errors: out
          .split("\n")
          .filter((l) => l.includes("error"))
          .slice(0, 10),
      }).toEqual({ exit: 0, errors: [] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
