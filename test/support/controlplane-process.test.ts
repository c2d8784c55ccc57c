import { afterAll, expect, test } from "bun:test";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "./controlplane-process.ts";

let cp: ControlPlaneProcess;
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

test("a real control-plane process serves health and the OpenAPI document", async () => {
  cp = await startControlPlane();
  expect((await fetch(`${cp.url}/healthz`)).status).toBe(200);
  const doc = (await (await fetch(`${cp.url}/api/v1/openapi.json`)).json()) as { openapi: string };
  expect(doc.openapi).toStartWith("3.");
  expect(cp.token).toStartWith("svc_at_");
});
