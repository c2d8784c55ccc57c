// docs/siem.md "Try it in the demo", as written: a control plane with the demo's opt-in
// (SVC_CP_ALLOW_LOOPBACK_SINKS=1, which `scripts/start.sh --demo` sets) takes a webhook sink on
// loopback, and the example receiver (examples/siem-receiver/server.ts) checks each batch's
// signature and prints the records. Without the opt-in (and without
// SVC_CP_ALLOW_PRIVATE_OUTBOUND) the same sink is refused: the default stays closed.
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { REPO, cleanup, freePort, startControlPlane, waitFor, type ControlPlaneProcess } from "../support/controlplane-process.ts";
import { api, bootstrapRuntime, createAgent, createInstallation, runtimeRecord, svc } from "./cli-support.ts";

const SECRET = "try-it-locally-0123456789";
const started: ControlPlaneProcess[] = [];
let receiver: ReturnType<typeof Bun.spawn> | null = null;
afterAll(async () => {
  receiver?.kill();
  for (const cp of started) {
    await cp.stop();
    cleanup(cp.dataDir);
  }
});

test("the demo's loopback opt-in: a webhook sink to the example receiver delivers signed records it prints; without it the sink is refused", async () => {
  const port = freePort();
  receiver = Bun.spawn(["bun", join(REPO, "examples/siem-receiver/server.ts"), String(port)], { env: { ...process.env, SIEM_SECRET: SECRET }, stdout: "pipe", stderr: "pipe" });
  let printed = "";
  void (async () => {
    const reader = (receiver!.stdout as ReadableStream<Uint8Array>).getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) printed += new TextDecoder().decode(r.value);
  })();
  await waitFor(() => printed.includes("listening on"), "the receiver to listen");

  const strict = await startControlPlane({ env: { SVC_CP_ALLOW_PRIVATE_OUTBOUND: "0" } });
  started.push(strict);
  const create = async (cp: ControlPlaneProcess) =>
    svc(cp, ["audit", "sinks", "create", "--name", "local", "--kind", "webhook", "--endpoint", `http://127.0.0.1:${port}/hec`, "--secret-stdin"], { stdin: SECRET });
  const refused = await create(strict);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("is a loopback address");
  expect(refused.stderr.trim()).toEndWith("(outbound_url_refused)");

  const demo = await startControlPlane({ env: { SVC_CP_ALLOW_PRIVATE_OUTBOUND: "0", SVC_CP_ALLOW_LOOPBACK_SINKS: "1" } });
  started.push(demo);
  const made = await create(demo);
  expect(made.stderr).toBe("");
  expect(made.code).toBe(0);
  const rt = await bootstrapRuntime(demo, (await createInstallation(demo, await createAgent(demo))).id);
  const rec = runtimeRecord(rt, { tool_name: "crm.lookup_customer", action: "tool:crm.lookup_customer" });
  expect((await api(demo, "POST", "/runtime/audit-records", { records: [rec] }, rt.token)).status).toBe(200);
  await waitFor(() => printed.includes(rec.id), "the receiver to print the delivered record", 30_000);
  expect(printed).toMatch(new RegExp(`${rec.id}\\s+tool\\s+crm\\.lookup_customer\\s+permit\\s+policy`));
  expect(printed).not.toContain("refused a batch");
}, 90_000);
