// The OpenAPI document names its security schemes (issue 20; the per-operation responses and
// the generated client are still to do: see the issue note).
import { expect, test } from "bun:test";
import { OPENAPI_PATH } from "./app.ts";
import { testControlPlane } from "./testing.ts";

test("the OpenAPI document declares the API token, session and runtime token schemes", async () => {
  const cp = await testControlPlane();
  const doc = (await cp.call("GET", OPENAPI_PATH, { token: null })).json;
  expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["apiToken", "runtimeToken", "session"]);
  expect(doc.components.securitySchemes.apiToken).toMatchObject({ type: "http", scheme: "bearer" });
});
