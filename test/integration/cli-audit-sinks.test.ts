// svc audit sinks create|list|update|delete against a real control plane process, whose delivery loop
// streams ingested records to a real HTTPS receiver: HEC lines with the HMAC signature, the
// receiver down across a control-plane restart, and every record delivered once it is back,
// with the same ids. The secret never shows in the list, the CLI's output or the process's logs.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import type { Server } from "bun";
import { type ControlPlaneProcess, cleanup, startControlPlane, waitFor } from "../support/controlplane-process.ts";
import { ocsfProblems } from "../support/siem-schemas/validate.ts";
import { testTls } from "../support/tls.ts";
import { api, bootstrapRuntime, createAgent, createInstallation, org, runtimeRecord, svc } from "./cli-support.ts";

const SECRET = "cli-test-hmac-key-0123456789";
let cp: ControlPlaneProcess;
let runtime: Awaited<ReturnType<typeof bootstrapRuntime>>;
const got: { signature: string | null; body: string }[] = [];
let server: Server<undefined> | null = null;

function listen(port = 0): number {
  const tls = testTls();
  server = Bun.serve({
    hostname: "127.0.0.1",
    port,
    tls: { cert: tls.cert, key: tls.key },
    async fetch(req) {
      got.push({ signature: req.headers.get("x-svc-signature"), body: await req.text() });
      return Response.json({ text: "Success", code: 0 });
    },
  });
  return server.port!;
}
const receivedIds = () => got.flatMap((g) => g.body.split("\n").map((l) => JSON.parse(l).event.id as string));

beforeAll(async () => {
  cp = await startControlPlane();
  runtime = await bootstrapRuntime(cp, (await createInstallation(cp, await createAgent(cp))).id);
});
afterAll(async () => {
  await server?.stop(true);
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

async function ship(n: number): Promise<string[]> {
  const records = Array.from({ length: n }, () => runtimeRecord(runtime));
  const r = await api(cp, "POST", "/runtime/audit-records", { records }, runtime.token);
  expect(r.json.inserted).toBe(n);
  return records.map((x) => x.id);
}

test("create, deliver, survive a receiver outage across a restart, list health, delete", async () => {
  const port = listen();
  const url = `https://127.0.0.1:${port}/services/collector/event`;
  const ca = `${testTls().dir}/ca.pem`;
  const base = ["audit", "sinks", "create", "--name", "splunk", "--kind", "webhook", "--endpoint", url, "--ca-file", ca];
  const noSecret = await svc(cp, base);
  expect(noSecret.code).toBe(2);
  expect(noSecret.stderr).toContain("--secret-stdin");
  const made = await svc(cp, [...base, "--secret-stdin"], { stdin: `${SECRET}\n` });
  expect(made.stderr).toBe("");
  expect(made.code).toBe(0);
  expect(made.stdout).toContain("Created webhook sink snk_");
  const dup = await svc(cp, [...base, "--secret-stdin"], { stdin: SECRET });
  expect(dup.code).toBe(1);
  expect(dup.stderr).toContain('a sink named "splunk" already exists');
  const badEndpoint = await svc(cp, ["audit", "sinks", "create", "--name", "x", "--kind", "syslog", "--endpoint", "siem.example.com"]);
  expect(badEndpoint.code).toBe(1);
  expect(badEndpoint.stderr).toContain("fix --endpoint");

  // The sink gets the admin event of its own creation (before or after the records shipped next,
  // as the delivery loop happens to run: the admin chain is read after the store chain), then what is shipped, in order.
  const createdEvent = (await api(cp, "GET", org(cp, "/audit-records?action=siem_sink.create"))).json.records[0].id as string;
  const shipped = () => receivedIds().filter((id) => id !== createdEvent);
  const first = await ship(3);
  await waitFor(() => receivedIds().length >= 4, "the first records at the receiver", 30_000);
  expect(receivedIds().filter((id) => id === createdEvent)).toHaveLength(1);
  expect(shipped()).toEqual(first);
  for (const g of got) expect(g.signature).toBe(`sha256=${createHmac("sha256", SECRET).update(g.body).digest("hex")}`);

  // The receiver goes down; records keep coming; the control plane restarts meanwhile.
  await server!.stop(true);
  const during = [...(await ship(4)), ...(await ship(2))];
  await waitFor(async () => (await api(cp, "GET", org(cp, "/siem-sinks"))).json.sinks[0].health.status === "failing", "the sink to fail", 30_000);
  const failing = JSON.parse((await svc(cp, ["audit", "sinks", "list", "--json"])).stdout).sinks[0];
  expect(failing.health).toMatchObject({ status: "failing", lag_records: 6, delivered: 4 });
  await cp.restart();
  listen(port);
  await waitFor(() => receivedIds().length >= 10, "the backlog at the receiver", 60_000);
  expect(shipped()).toEqual([...first, ...during]);
  expect(receivedIds()).toHaveLength(10);

  await waitFor(async () => (await api(cp, "GET", org(cp, "/siem-sinks"))).json.sinks[0].health.status === "ok", "the sink to be healthy again", 30_000);
  const list = await svc(cp, ["audit", "sinks", "list"]);
  expect(list.code).toBe(0);
  expect(list.stdout).toMatch(/splunk\s+webhook\s+svc\s+https:\/\/127\.0\.0\.1:\d+\/services\/collector\/event\s+ok\s+10\s+0 \/ 0s/);
  const json = await svc(cp, ["audit", "sinks", "list", "--json"]);
  expect(JSON.parse(json.stdout).sinks[0]).toMatchObject({ name: "splunk", secret_set: true, health: { delivered: 10, lag_records: 0, failures: 0 } });
  for (const text of [list.stdout, json.stdout, made.stdout, cp.logs()]) expect(text).not.toContain(SECRET);
  expect(cp.logs()).toContain("siem sink delivery failed");

  // An OCSF sink: its events validate against the vendored schema; a format svc does not speak is a usage error.
  const badFormat = await svc(cp, ["audit", "sinks", "create", "--name", "x", "--kind", "otlp", "--endpoint", url, "--format", "cef"]);
  expect([badFormat.code, badFormat.stderr]).toEqual([2, expect.stringContaining('--format must be one of svc, ocsf, ecs, not "cef"')]);
  const lake = await svc(cp, ["audit", "sinks", "create", "--name", "lake", "--kind", "webhook", "--endpoint", url, "--ca-file", ca, "--format", "ocsf", "--secret-stdin"], { stdin: SECRET });
  expect([lake.code, lake.stdout]).toEqual([0, expect.stringContaining(", OCSF events;")]);
  const before = got.length;
  const ocsfIds = await ship(2);
  await waitFor(() => got.slice(before).some((g) => g.body.includes('"sourcetype":"svc:audit:ocsf"') && g.body.includes(ocsfIds[1]!)), "the OCSF events at the receiver", 30_000);
  const ocsf = got
    .slice(before)
    .flatMap((g) => g.body.split("\n").map((l) => JSON.parse(l)))
    .filter((l) => l.sourcetype === "svc:audit:ocsf");
  for (const l of ocsf) expect(ocsfProblems(l.event)).toEqual([]);
  expect(ocsf.filter((l) => l.event.class_uid === 6003).map((l) => l.event.metadata.uid)).toEqual(ocsfIds);
  expect((await svc(cp, ["audit", "sinks", "list"])).stdout).toMatch(/lake\s+webhook\s+ocsf\s+https/);
  // Its format changed afterwards: the list says so, the change is in the admin trail; a bad one is a usage error.
  const toEcs = await svc(cp, ["audit", "sinks", "update", "lake", "--format", "ecs"]);
  expect([toEcs.code, toEcs.stdout]).toEqual([0, expect.stringContaining("sends ECS events from its next batch on")]);
  expect((await svc(cp, ["audit", "sinks", "list"])).stdout).toMatch(/lake\s+webhook\s+ecs\s+https/);
  expect((await api(cp, "GET", org(cp, "/audit-records?action=siem_sink.update"))).json.records).toHaveLength(1);
  const badUpdate = await svc(cp, ["audit", "sinks", "update", "lake", "--format", "cef"]);
  expect([badUpdate.code, badUpdate.stderr]).toEqual([2, expect.stringContaining('--format must be one of svc, ocsf, ecs, not "cef"')]);
  expect((await svc(cp, ["audit", "sinks", "update", "nope", "--format", "ecs"])).code).toBe(1);
  expect((await svc(cp, ["audit", "sinks", "delete", "lake"])).code).toBe(0);

  const del = await svc(cp, ["audit", "sinks", "delete", "splunk"]);
  expect(del.code).toBe(0);
  expect(del.stdout).toMatch(/^Deleted sink snk_\w+ \(splunk\)\.\n$/);
  expect((await svc(cp, ["audit", "sinks", "list"])).stderr).toContain("No SIEM sinks.");
});
