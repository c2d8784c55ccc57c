// Usage and metrics on the real stack (issue 16): a control-plane process and a proxy process,
// the HTTPS model double speaking the real usage wire format. A streamed and a non-streamed
// call are counted (`svc usage`, with cost at the profile's prices), and a real Prometheus
// (Debian package `prometheus`, installed by scripts/setup.sh) scrapes both /metrics targets.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { type ControlPlaneProcess, collectOutput, freePort, startControlPlane } from "../support/controlplane-process.ts";
import { startModelServer } from "../support/model-server.ts";
import { addPolicy, adminApi, type Api, must, type ProxyProcess, proxyEnv, type Scenario, setUpScenario, startProxy, waitFor } from "../../src/proxy/testing/integration.ts";
import { svc } from "./cli-support.ts";

setDefaultTimeout(90_000);
const METRICS_TOKEN = "metrics-test-token-0123456789";
let cp: ControlPlaneProcess;
let api: Api;
let s: Scenario;
let model: ReturnType<typeof startModelServer>;
let px: ProxyProcess;
let metricsPort: number;

beforeAll(async () => {
  cp = await startControlPlane({ env: { SVC_CP_METRICS_TOKEN: METRICS_TOKEN } });
  api = adminApi(cp);
  s = await setUpScenario(api, "usage");
  model = startModelServer();
  await addPolicy(api, s, `user:${s.users.alice!.id}`, "model:invoke");
  await addPolicy(api, s, "*", "tool:crm.read");
  const mp = await must(
    api("POST", "/model-profiles", {
      display_name: "Priced LLM",
      endpoint: model.endpoint,
      auth_type: "none",
      default_model: "m-small",
      models: ["m-small", "m-large"],
      workspace: s.workspace,
      prices: { "m-small": { prompt: 2, completion: 8 } },
    }),
    "create model profile",
  );
  await must(api("POST", `/model-profiles/${mp.id}/assign`, { agent_id: s.agentId }), "assign model profile");
  metricsPort = freePort();
  px = startProxy(
    proxyEnv(cp.url, s.runtimeToken, {
      SVC_PROXY_CA_FILE: model.caFile,
      SVC_PROXY_METRICS_LISTEN: `127.0.0.1:${metricsPort}`,
    }),
  );
  await px.waitReady();
});

afterAll(async () => {
  await px?.stop();
  await model?.stop();
  await cp?.stop();
});

describe("usage on the real stack", () => {
  test("a streamed and a non-streamed call are counted in the outcome records and by svc usage", async () => {
    const alice = s.users.alice!;
    model.behaviour = { text: "one two three" };
    const plain = await px.call("/v1/chat/completions", { user: alice.remote, body: { model: "m-small", messages: [{ role: "user", content: "count these four words" }] } });
    expect((await plain.json()).usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 3 });
    const streamed = await px.call("/v1/chat/completions", { user: alice.remote, body: { model: "m-small", stream: true, messages: [{ role: "user", content: "five words are in here" }] } });
    const text = await streamed.text();
    expect(text).not.toContain('"usage"'); // the front end gets what it would have without the proxy asking
    expect(text).toContain("data: [DONE]");
    const outcomeOf = async (ref: string) => {
      let found: any = null;
      await waitFor(async () => {
        const r = await api("GET", `/audit-records?kind=outcome&user=${alice.id}&limit=50`);
        found = (r.json?.records ?? []).find((x: any) => x.ref === ref);
        return !!found;
      }, `the outcome record of ${ref}`);
      return found;
    };
    expect(await outcomeOf(plain.headers.get("x-svc-record-id")!)).toMatchObject({ prompt_tokens: 4, completion_tokens: 3, cost: 0.000032, outcome: "ok" });
    expect(await outcomeOf(streamed.headers.get("x-svc-record-id")!)).toMatchObject({ prompt_tokens: 5, completion_tokens: 3, cost: 0.000034, outcome: "ok" });

    const run = await svc(cp, ["usage", "--by", "user", "--since", "1h", "--json"]);
    expect(run.code).toBe(0);
    const row = JSON.parse(run.stdout).rows.find((r: any) => r.key === alice.id);
    expect(row).toMatchObject({ label: alice.email, calls: 2, prompt_tokens: 9, completion_tokens: 6, total_tokens: 15 });
    expect(row.cost).toBeCloseTo(0.000066, 9);
    const table = await svc(cp, ["usage", "--by", "model"]);
    expect(table.stdout).toMatch(/^MODEL\s+CALLS\s+PROMPT\s+COMPLETION\s+TOTAL\s+COST\nm-small\s+2\s+9\s+6\s+15\s+0\.0001\n$/);
  });
});

describe("metrics", () => {
  test("a real Prometheus scrapes the proxy and the control plane", async () => {
    const promBin = Bun.which("prometheus");
    if (!promBin) throw new Error("prometheus is not installed: run scripts/setup.sh (Debian package prometheus)");
    await px.decide("crm.read", s.users.bob!.remote);
    const dir = mkdtempSync(join(tmpdir(), "svc-prom-"));
    const cpTarget = new URL(cp.url).host;
    writeFileSync(join(dir, "token"), METRICS_TOKEN);
    writeFileSync(
      join(dir, "prometheus.yml"),
      [
        "global: { scrape_interval: 1s, scrape_timeout: 1s }",
        "scrape_configs:",
        "  - job_name: svc-proxy",
        `    static_configs: [{ targets: ["127.0.0.1:${metricsPort}"] }]`,
        "  - job_name: svc-controlplane",
        `    authorization: { credentials_file: ${join(dir, "token")} }`,
        `    static_configs: [{ targets: ["${cpTarget}"] }]`,
        "",
      ].join("\n"),
    );
    const port = freePort();
    const prom: Subprocess = Bun.spawn([promBin, `--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const out = collectOutput(prom);
    const query = async (q: string) => {
      const r = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(q)}`).catch(() => null);
      return r?.ok ? ((await r.json()) as any).data.result : [];
    };
    try {
      await waitFor(
        async () => {
          if (prom.exitCode !== null) throw new Error(`prometheus exited ${prom.exitCode}: ${out.text()}`);
          return (await query('up{job="svc-proxy"} == 1')).length === 1 && (await query('up{job="svc-controlplane"} == 1')).length === 1;
        },
        `both targets up in Prometheus\n${out.text()}`,
        60_000,
      );
      const proxyDecisions = await query('svc_proxy_decisions_total{job="svc-proxy",kind="tool",result="permit"}');
      expect(Number(proxyDecisions[0]?.value[1])).toBeGreaterThanOrEqual(1);
      expect(Number((await query('svc_proxy_model_tokens_total{job="svc-proxy",type="prompt"}'))[0]?.value[1])).toBe(9);
      expect((await query('svc_proxy_decision_duration_seconds_count{job="svc-proxy"}')).length).toBeGreaterThanOrEqual(1);
      expect((await query('svc_proxy_spool_oldest_unshipped_age_seconds{job="svc-proxy"}')).length).toBe(1);
      expect((await query('svc_proxy_bundle_age_seconds{job="svc-proxy"}')).length).toBe(1);
      await waitFor(async () => Number((await query('svc_cp_model_tokens_total{job="svc-controlplane",type="prompt"}'))[0]?.value[1]) === 9, "the control plane's token counter in Prometheus");
      expect(Number((await query('svc_cp_audit_records_total{job="svc-controlplane",status="inserted"}'))[0]?.value[1])).toBeGreaterThanOrEqual(5);
    } finally {
      prom.kill("SIGTERM");
      await prom.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
